"""Test double of an *installed* torch_fl package (flagprop's own code): real
gates read from the environment, so installed mode can be tested on the CPU."""

import os


def _build_accelerator():
    return os.environ.get("FLAGPROP_TEST_ACCELERATOR", "dcu")


def _conf_routes_to_flaggems():
    return True
