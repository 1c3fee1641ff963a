"""What a property observes beyond a call's outputs: the stream a launch
runs on (``streams``, P7), the fast path's hits (``hits``, P8) and A/B
timing (``timing``, P9). Built on ``flagprop.engine`` (the installer's
calls and their effects are ``flagprop.engine.observe``); nothing of
``judging`` (the check table hands ``streams`` the tolerance comparison it
needs).

Kept empty of imports: a reproducer embeds only the modules its case runs."""
