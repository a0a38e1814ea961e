"""nerve-tools: record and replay nerve channels to MCAP (``nerve record``,
``nerve play``), watch them live (``nerve top``), serve them to Foxglove
(``nerve foxglove``), plot benchmark results (``nerve plot``), and built-in
schemas for common data (:mod:`nerve_tools.codec.schemas`). See docs/tools.md."""

__version__ = "0.1.0"
