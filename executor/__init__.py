"""The executor: a tensor-parallel FP8 transformer that runs plans as real forward passes."""
