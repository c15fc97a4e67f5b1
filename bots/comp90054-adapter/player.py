"""A placeholder COMP90054 2020 agent: plays a random legal move. Replace this file with
your own ``player.py`` (class ``myPlayer``), unchanged from the course's layout."""

import random

from advance_model import AdvancePlayer


class myPlayer(AdvancePlayer):
    def __init__(self, _id):
        super().__init__(_id)

    def StartRound(self, game_state):
        return None

    def SelectMove(self, moves, game_state):
        return random.choice(moves)
