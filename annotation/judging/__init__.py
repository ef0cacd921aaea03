"""The live judging path, named from the flow: :mod:`.queue` serves the next task (leases),
:mod:`.submit` takes a label or its undo, :mod:`.escalations` an escalation, :mod:`.answer`
says what every request answers, :mod:`.pair_state` is the one writer of a pair's counters,
:mod:`.statements` holds the hand-written SQL and :mod:`.errors` the errors they raise."""
