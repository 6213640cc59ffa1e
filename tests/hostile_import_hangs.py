"""A target whose import never returns (loaded only by the hostile-input tests)."""

import time

time.sleep(3600)


def Factory(**config: int) -> None:
    return None
