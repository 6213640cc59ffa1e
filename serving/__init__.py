"""stallfree's schedulers driving a real engine: vLLM V1's `scheduler_cls` backed by `stallfree.reference`
or `stallfree.paged`, with the design's monitor beside it every step (`docs/serving.md`).

`mapping` (vLLM's options onto the contract, and what is refused) and `live` (the monitor beside a
running scheduler) need nothing but stallfree; `vllm_scheduler` (the classes vLLM is given) needs vLLM.
"""

from .live import Live, MonitorStop
from .mapping import DESIGNS, Deployment, Unmapped, check, refusals, reserved_max_new

__all__ = ["DESIGNS", "Deployment", "Live", "MonitorStop", "Unmapped", "check", "refusals", "reserved_max_new"]
