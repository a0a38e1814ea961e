"""MCAP recordings: ``nerve record`` (:mod:`.record`) and ``nerve play``
(:mod:`.play`)."""
