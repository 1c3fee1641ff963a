"""What a property observes beyond a call's outputs: the installer's calls
and their effects (``observe``, P1-P4), the stream a launch runs on
(``streams``, P7), the fast path's hits (``hits``, P8) and A/B timing
(``timing``, P9).

Kept empty of imports: a reproducer embeds only the modules its case runs."""
