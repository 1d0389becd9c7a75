"""A participant of `bilateral lab` played by a program over the WebSocket, as a browser page would: the package's own
bots (`bilateral.lab_admin`, which `bilateral lab bots` runs), under the names tests/test_lab.py and tools/lab_flood.py
use: `move` (accept an offer within its own number, else offer 10% inside it), `belief` (the answer to the belief
question: midway between its own number and the other side's last offer) and `participant` (consent, the check, each
game and its belief question, the payoff page)."""
from bilateral.lab_admin import bot as participant, bot_belief as belief, bot_move as move

__all__ = ['belief', 'move', 'participant']
