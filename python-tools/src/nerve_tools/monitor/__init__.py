"""What runs on this host: ``nerve who`` (:mod:`.who`: which processes
hold which channels), ``nerve graph`` (:mod:`.graph`) and ``nerve top``
(:mod:`.top`)."""
