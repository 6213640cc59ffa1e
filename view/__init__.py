"""The step view: a run recorded step by step from the monitor's facts, printed, drawn as a PNG
(`plot`, matplotlib) or written as one self-contained HTML page with a step slider (`html`).

Standard library only, except `plot`, which needs the `plot` extra.
"""

from .record import ADMISSION, CHUNK, DECODE, KINDS, STATES, Cell, EntryView, Recording, StepView, Tap, record
from .waiting import REASONS

__all__ = [
    "ADMISSION", "CHUNK", "DECODE", "KINDS", "REASONS", "STATES",
    "Cell", "EntryView", "Recording", "StepView", "Tap", "record",
]
