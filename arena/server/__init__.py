"""`arena serve`: host a competition (submissions, a continuous ladder, a live leaderboard).

Needs the optional ``server`` extra (``pip install 'azul-arena[server]'``).
"""
