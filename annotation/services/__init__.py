"""ORM-facing operations of the annotation app: the only place domain logic meets the ORM.

Pure modules one level up (:mod:`annotation.policy.rules`, :mod:`annotation.campaigns.pooling`,
:mod:`annotation.agreement`, :mod:`annotation.ordering.proxy`) take arrays and plain data;
the modules here read and write campaigns, pairs, leases and judgements through them.
Views, the API, job kinds and commands call these and nothing below them.
"""
