"""Plots beside the report, made with matplotlib (Agg, no display)."""


def ab_plot(evidence, path, title):
    """P9's A/B distributions as a PNG at ``path``: host time (and device
    time where measured) per call, patch on (A) against off (B), one point per
    pair, with the ratio's 95 % confidence interval in the panel title.
    Returns ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("host", "host enqueue µs per call")]
    if evidence.get("device_a"):
        panels.append(("device", "device µs per call (events)"))
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for ax, (kind, label) in zip(axes[0], panels):
        a, b = evidence[kind + "_a"], evidence[kind + "_b"]
        names = ["A: patch on", "B: patch off"]
        try:
            ax.boxplot([a, b], tick_labels=names, showfliers=False)  # matplotlib >= 3.9
        except TypeError:
            ax.boxplot([a, b], labels=names, showfliers=False)
        for x, v in ((1, a), (2, b)):
            ax.scatter([x + (i % 7 - 3) * 0.02 for i in range(len(v))], v, s=6, alpha=0.5)
        s = evidence["summary"][kind]
        ax.set_title("%s: B/A %.3f (95%% CI %.3f-%.3f), %d pairs" % (
            kind, s["ratio_b_over_a"], s["ratio_ci95"][0], s["ratio_ci95"][1], s["pairs"]), fontsize=9)
        ax.set_ylabel(label)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
