"""From a token budget to milliseconds: a roofline cost model of a step, with model and GPU presets.

Standard library only. `Roofline(Deployment(model, gpu, tp, dtype), mode).step_seconds(StepLoad(...))`
prices one step; `first_token` walks the contract's floor chain.
"""

from .chain import FirstToken, first_token, full_step, worst_step
from .deployment import MEMORY_SHARE, Deployment
from .dtypes import DTYPES, bytes_per_value
from .gpu import Gpu
from .load import StepLoad
from .model import Model
from .presets import GPUS, MODELS, gpu, model
from .roofline import MODES, Roofline

__all__ = [
    "DTYPES", "GPUS", "MEMORY_SHARE", "MODELS", "MODES",
    "Deployment", "FirstToken", "Gpu", "Model", "Roofline", "StepLoad",
    "bytes_per_value", "first_token", "full_step", "gpu", "model", "worst_step",
]
