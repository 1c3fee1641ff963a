"""Valid samples for ATen overloads that OpInfo's samples do not reach.

OpInfo (``flagprop.engine.opinfo``) feeds most overloads whose valid inputs the
schema cannot say, but not all that FlagGems registers: internal overloads
that only another op's backward or a compiler pass calls
(``_native_batch_norm_legit_no_training``, ``index_select_backward``,
``_upsample_bicubic2d_aa_backward``), and ops whose entry a given torch lacks
(``conv3d``, ``upsample_nearest3d`` in 1.13). This module holds flagprop's
own samples for them, each written from the op's ATen schema and its
documented contract (``native_functions.yaml``, the ``torch.nn.functional``
docs): one or two small, valid calls per overload.

Two kinds of sample, both run on the CPU while the bank is built:

- ``DIRECT``: a function returning ``[(overload, args, kwargs), ...]``; each
  call that CPU ATen accepts is recorded as a sample of ``overload``.
- ``PROGRAMS``: a function running public torch code (forward, then
  backward) under the bank's recording dispatch mode, so that every ATen
  overload it reaches is recorded, as OpInfo's samples are.

A call CPU ATen rejects is dropped (the torch of the target may lack the
overload, or take other arguments); nothing here is judged. The samples
carry flagprop's usual treatment afterwards: run-dtype tensors are laid out
and filled by flagprop, index and length tensors keep their values.
"""


def _g(torch):
    return torch.Generator().manual_seed(0)


def _batch_norm(torch):
    g = _g(torch)
    x = torch.randn(4, 3, 5, 2, generator=g)
    w, b = torch.rand(3, generator=g) + 0.5, torch.randn(3, generator=g)
    rm, rv = torch.randn(3, generator=g), torch.rand(3, generator=g) + 0.5
    return [
        ("_native_batch_norm_legit_no_training", [x, w, b, rm, rv, 0.1, 1e-5], {}),
        ("_native_batch_norm_legit_no_training", [x[:, :, 0], None, None, rm, rv, 0.1, 1e-3], {}),
        ("_native_batch_norm_legit_functional", [x, w, b, rm.clone(), rv.clone(), True, 0.1, 1e-5], {}),
        ("_native_batch_norm_legit_functional", [x, w, b, rm.clone(), rv.clone(), False, 0.1, 1e-5], {}),
        ("_batch_norm_with_update_functional", [x, w, b, rm.clone(), rv.clone(), 0.1, 1e-5], {}),
        ("_batch_norm_no_update", [x, w, b, rm.clone(), rv.clone(), 0.1, 1e-5], {}),
        ("_batch_norm_no_update", [x[:, :, :, 0], None, None, None, None, 0.1, 1e-5], {}),
        ("_native_batch_norm_legit", [x, w, b, rm.clone(), rv.clone(), False, 0.1, 1e-5], {}),
        ("native_batch_norm", [x, w, b, rm.clone(), rv.clone(), False, 0.1, 1e-5], {}),
    ]


def _index_ops(torch):
    g = _g(torch)
    grad = torch.randn(3, 4, generator=g)
    index = torch.tensor([2, 0, 2])
    src = torch.randn(2, 3, generator=g)
    self = torch.randn(4, 5, generator=g)
    sidx = torch.tensor([[0, 3, 1], [2, 0, 3]])
    return [
        ("index_select_backward", [grad, [5, 4], 0, index], {}),
        ("index_select_backward", [grad.t().contiguous(), [4, 6], 1, index], {}),
        ("scatter.reduce", [self, 0, sidx, src], {"reduce": "add"}),
        ("scatter.reduce", [self, 1, sidx, src], {"reduce": "multiply"}),
        ("scatter_.reduce", [self.clone(), 0, sidx, src], {"reduce": "add"}),
        ("split_with_sizes_copy", [self, [1, 3], 0], {}),
        ("split_with_sizes_copy", [self, [2, 0, 3], 1], {}),
        ("one_hot", [torch.tensor([0, 3, 1, 1]), 5], {}),
        ("one_hot", [torch.tensor([[2, 0], [1, 2]]), -1], {}),
        ("bincount", [torch.tensor([0, 4, 1, 1, 7])], {}),
        ("bincount", [torch.tensor([2, 0, 2]), torch.rand(3, generator=g), 5], {}),
        ("_compute_linear_combination", [torch.randn(3, 4, 2, generator=g), torch.randn(5, 3, generator=g)], {}),
        ("embedding_backward", [torch.randn(4, 3, generator=g), torch.tensor([1, 0, 5, 1]), 6, -1, False, False], {}),
        ("embedding_backward", [torch.randn(2, 2, 3, generator=g), torch.tensor([[1, 2], [2, 2]]), 4, 2, True, False],
         {}),
        ("_jagged_to_padded_dense_forward", [torch.randn(6, 3, generator=g), [torch.tensor([0, 2, 2, 6])], [4], 0.5],
         {}),
    ]


def _quantize(torch):
    g = _g(torch)
    x = torch.randn(4, 3, 5, generator=g)
    scale = torch.rand(3, generator=g) * 0.1 + 0.01
    zp = torch.tensor([0, 3, 2], dtype=torch.int32)
    one = torch.tensor([0.05])
    return [
        ("fake_quantize_per_channel_affine", [x, scale, zp, 1, -128, 127], {}),
        ("fake_quantize_per_channel_affine_cachemask", [x, scale, zp, 1, 0, 255], {}),
        ("fake_quantize_per_tensor_affine", [x, 0.05, 3, -128, 127], {}),
        ("_fake_quantize_learnable_per_tensor_affine", [x, one, torch.tensor([2.0]), 0, 255, 1.0], {}),
        ("choose_qparams_optimized", [torch.randn(64, generator=g), 64, 200, 0.16, 8], {}),
    ]


def _conv_and_grids(torch):
    g = _g(torch)
    x5 = torch.randn(2, 4, 5, 6, 3, generator=g)
    w5 = torch.randn(6, 2, 3, 2, 1, generator=g)
    x4 = torch.randn(2, 3, 7, 6, generator=g)
    w4 = torch.randn(4, 3, 3, 3, generator=g)
    theta2 = torch.randn(2, 2, 3, generator=g)
    theta3 = torch.randn(2, 3, 4, generator=g)
    return [
        ("conv3d", [x5, w5, torch.randn(6, generator=g), [1, 2, 1], [1, 0, 0], [1, 1, 1], 2], {}),
        ("conv3d", [x5[0], w5[:, :, :, :, :1], None, [1, 1, 1], [0, 0, 0], [1, 1, 1], 2], {}),
        ("conv3d.padding", [x5, w5, None, [1, 1, 1], "same", [1, 1, 1], 2], {}),
        ("_convolution_mode", [x4, w4, None, [1, 1], "same", [1, 1], 1], {}),
        ("_convolution_mode", [x4, w4, torch.randn(4, generator=g), [2, 1], "valid", [1, 2], 1], {}),
        ("affine_grid_generator", [theta2, [2, 3, 4, 5], False], {}),
        ("affine_grid_generator", [theta3, [2, 1, 3, 4, 2], True], {}),
        ("pdist", [torch.randn(5, 3, generator=g), 2.0], {}),
        ("pdist", [torch.randn(4, 2, generator=g), 1.0], {}),
        ("_linalg_eigvals", [torch.randn(3, 3, generator=g)], {}),
        ("_linalg_eigvals", [torch.randn(2, 4, 4, generator=g)], {}),
        ("linalg_matrix_norm", [torch.randn(3, 4, generator=g), 2, [-2, -1], False], {}),
        ("linalg_matrix_norm", [torch.randn(2, 3, 3, generator=g), 1, [1, 2], True], {}),
        ("linalg_matrix_norm.str_ord", [torch.randn(3, 4, generator=g), "nuc", [-2, -1], False], {}),
        ("_weight_norm_interface", [torch.randn(4, 3, generator=g), torch.rand(4, 1, generator=g) + 0.5, 0], {}),
        # Grouped matrix products: K and N multiples of 8 (its kernels' alignment).
        ("_grouped_mm", [torch.randn(2, 3, 8, generator=g), torch.randn(2, 8, 16, generator=g)], {}),
        ("_grouped_mm", [torch.randn(1, 5, 16, generator=g), torch.randn(1, 16, 8, generator=g)], {}),
    ]


def _embedding_bag(torch):
    """``_embedding_bag_dense_backward`` with the bookkeeping tensors its
    forward returns (offset2bag, bag sizes, argmax indices)."""
    g = _g(torch)
    weight = torch.randn(6, 3, generator=g)
    idx, offsets = torch.tensor([1, 0, 5, 1, 2]), torch.tensor([0, 2])
    calls = []
    for mode in (0, 1, 2):  # sum, mean, max
        _, offset2bag, bag_size, maximum = torch.ops.aten._embedding_bag(weight, idx, offsets, False, mode)
        grad = torch.randn(2, 3, generator=g)
        calls.append(("_embedding_bag_dense_backward",
                      [grad, idx, offset2bag, bag_size, maximum, 6, False, mode, None, -1], {}))
    return calls


def _losses_and_optim(torch):
    g = _g(torch)
    log_probs = torch.randn(6, 2, 4, generator=g).log_softmax(2)
    targets = torch.tensor([[1, 2, 2], [3, 1, 0]])
    params = [torch.randn(3, generator=g), torch.randn(2, 2, generator=g)]
    grads = [torch.randn_like(p) for p in params]
    avgs = [torch.zeros_like(p) for p in params]
    sqs = [torch.zeros_like(p) for p in params]
    steps = [torch.tensor(1.0) for _ in params]
    adam = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "weight_decay": 0.0, "eps": 1e-8, "amsgrad": False,
            "maximize": False}
    return [
        ("ctc_loss.IntList", [log_probs, targets, [6, 5], [3, 2], 0, 1, False], {}),
        ("ctc_loss.Tensor", [log_probs, targets, torch.tensor([6, 5]), torch.tensor([3, 2]), 0, 0, True], {}),
        ("_fused_adam", [params, grads, avgs, sqs, [], steps], adam),
    ]


def _upsample(torch):
    """The overloads with output sizes (``upsample_nearest3d``), which a
    torch whose ``interpolate`` calls the ``.vec`` ones (1.13) never
    reaches, and their backward overloads."""
    g = _g(torch)
    x4 = torch.randn(2, 3, 5, 4, generator=g)
    x5 = torch.randn(1, 2, 3, 4, 2, generator=g)
    return [
        ("upsample_nearest3d", [x5, [4, 3, 5]], {}),
        ("upsample_trilinear3d", [x5, [5, 3, 3], False], {}),
        ("_upsample_nearest_exact3d", [x5, [2, 5, 3]], {}),
        ("_upsample_nearest_exact2d", [x4, [7, 3]], {}),
        ("_upsample_bicubic2d_aa", [x4, [3, 6], False], {}),
        ("_upsample_bilinear2d_aa", [x4, [3, 6], True], {}),
        ("_upsample_bicubic2d_aa_backward", [torch.randn(2, 3, 3, 6, generator=g), [3, 6], [2, 3, 5, 4], False], {}),
        ("_upsample_bilinear2d_aa_backward", [torch.randn(2, 3, 3, 6, generator=g), [3, 6], [2, 3, 5, 4], True], {}),
        ("_upsample_nearest_exact2d_backward", [torch.randn(2, 3, 7, 3, generator=g), [7, 3], [2, 3, 5, 4]], {}),
        ("upsample_linear1d_backward", [torch.randn(2, 3, 7, generator=g), [7], [2, 3, 5], False], {}),
        ("upsample_nearest3d_backward", [torch.randn(1, 2, 4, 3, 5, generator=g), [4, 3, 5], [1, 2, 3, 4, 2]], {}),
    ]


DIRECT = [_batch_norm, _index_ops, _quantize, _conv_and_grids, _embedding_bag, _losses_and_optim, _upsample]


def _interpolate(torch):
    F = torch.nn.functional
    g = _g(torch)
    x3 = torch.randn(2, 3, 5, generator=g, requires_grad=True)
    x4 = torch.randn(2, 3, 5, 4, generator=g, requires_grad=True)
    x5 = torch.randn(1, 2, 3, 4, 2, generator=g, requires_grad=True)
    runs = [
        lambda: F.interpolate(x3, size=7, mode="linear", align_corners=False),
        lambda: F.interpolate(x3, scale_factor=0.5, mode="linear", align_corners=True),
        lambda: F.interpolate(x4, size=(7, 3), mode="nearest-exact"),
        lambda: F.interpolate(x4, size=(3, 6), mode="bilinear", antialias=True, align_corners=False),
        lambda: F.interpolate(x4, size=(3, 6), mode="bicubic", antialias=True, align_corners=False),
        lambda: F.interpolate(x5, size=(4, 3, 5), mode="nearest"),
        lambda: F.interpolate(x5, size=(2, 5, 3), mode="nearest-exact"),
        lambda: F.interpolate(x5, size=(5, 3, 3), mode="trilinear", align_corners=False),
    ]
    return runs


def _grids_and_norms(torch):
    F = torch.nn.functional
    g = _g(torch)
    x5 = torch.randn(2, 3, 4, 3, 5, generator=g, requires_grad=True)
    grid5 = (torch.rand(2, 3, 2, 4, 3, generator=g) * 2.2 - 1.1).requires_grad_()
    v = torch.randn(4, 3, generator=g, requires_grad=True)
    gw = (torch.rand(4, 1, generator=g) + 0.5).requires_grad_()
    weight = torch.randn(6, 3, generator=g, requires_grad=True)
    idx = torch.tensor([1, 0, 5, 1, 2])
    offsets = torch.tensor([0, 2])
    return [
        lambda: F.grid_sample(x5, grid5, mode="bilinear", padding_mode="zeros", align_corners=False),
        lambda: F.grid_sample(x5, grid5, mode="nearest", padding_mode="border", align_corners=True),
        lambda: torch._weight_norm(v, gw, 0),
        lambda: F.embedding_bag(idx, weight, offsets, mode="mean"),
        lambda: F.embedding_bag(idx, weight, offsets, mode="sum", scale_grad_by_freq=True),
    ]


PROGRAMS = [_interpolate, _grids_and_norms]


def record_all(torch, bank, recorder):
    """Records every call of ``DIRECT`` that CPU ATen accepts, and every
    call ``PROGRAMS`` make (forward, and backward of their floating
    outputs) under ``recorder`` (a TorchDispatchMode class recording into
    ``bank``). Any failure drops only its own call."""
    for make in DIRECT:
        try:
            calls = make(torch)
        except Exception:
            continue
        for name, args, kwargs in calls:
            base, _, overload = name.partition(".")
            op = getattr(getattr(torch.ops.aten, base, None), overload or "default", None)
            if op is None:
                continue
            try:
                with torch.no_grad():
                    op(*args, **kwargs)
                bank.record(op, args, kwargs)
            except Exception:
                continue
    for make in PROGRAMS:
        try:
            runs = make(torch)
        except Exception:
            continue
        for run in runs:
            try:
                with recorder():
                    out = run()
                outs = [o for o in (out if isinstance(out, (tuple, list)) else [out])
                        if isinstance(o, torch.Tensor) and o.requires_grad and o.dtype.is_floating_point]
                if not outs:
                    continue
                leaves = [t for t in _leaves(out) if t.requires_grad]
                g = torch.Generator().manual_seed(0)
                grads = [torch.randn(o.shape, generator=g, dtype=o.dtype) for o in outs]
                with recorder():
                    torch.autograd.grad(outs, leaves or outs, grads, allow_unused=True)
            except Exception:
                continue


def _leaves(out):
    """The leaf tensors an output was computed from (its autograd graph)."""
    seen, found, stack = set(), [], [getattr(o, "grad_fn", None) for o in
                                     (out if isinstance(out, (tuple, list)) else [out])]
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        if hasattr(fn, "variable"):
            found.append(fn.variable)
        stack.extend(f for f, _ in getattr(fn, "next_functions", ()))
    return found
