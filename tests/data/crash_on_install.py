"""Test fixture: an installer that kills its process (flagprop must keep the
other targets' results and report this target as crashed)."""

import os


def _patch_flaggems_pointwise_dispatch():
    os.abort()
