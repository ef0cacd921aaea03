"""The live judging path, named from the flow: :mod:`.queue` serves the next task (leases,
:mod:`.priorities` orders the pairs), :mod:`.submit` takes a judgement, an undo or an
escalation, :mod:`.gold` mixes in gold and qualification tasks, :mod:`.standing` pauses
annotators, :mod:`.pair_state` is the one writer of a pair's counters, :mod:`.statements`
holds the hand-written SQL and :mod:`.errors` the errors every one of them raises."""
