"""Pictures: ``nerve foxglove`` (:mod:`.foxglove`, channels served to
Foxglove) and ``nerve plot`` (:mod:`.plot`, figures of benchmark
results)."""
