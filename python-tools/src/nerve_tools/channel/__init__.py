"""Verbs on one channel's messages: ``nerve echo`` (:mod:`.echo`),
``nerve pub`` (:mod:`.pub`), ``nerve hz|bw|delay`` (:mod:`.rate`), and how
they open and follow a channel (:mod:`.follow`)."""
