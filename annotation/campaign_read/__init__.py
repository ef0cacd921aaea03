"""A campaign's read side: one read model of its labels (:mod:`.labels`), the agreement
report (:mod:`.reporting`), label resolution (:mod:`.resolution`) and exports."""
