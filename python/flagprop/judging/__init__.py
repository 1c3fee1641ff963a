"""Judging: every judgement from observations to findings (``verdicts``) and
each property's observer paired with its verdict (``checks``, the entry
points the harness and every reproducer call). Above ``engine`` and
``observers``, which import nothing of it.

Kept empty of imports: a reproducer embeds only the modules its case runs."""
