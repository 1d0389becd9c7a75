"""A participant of `bilateral lab` played by a program over the WebSocket, as a browser page would: consent, the
comprehension check, then each game (accept an offer within its own number, else offer 10% inside it), the payoff page.
Used by tests/test_lab.py (and by its load test: many at once)."""
import asyncio, json, time
import websockets
from bilateral.lab import QUIZ

def move(st: dict) -> dict | None:
    "The bot's action on a game screen where it is its turn."
    mine, theirs, buyer = st['private']['amount'], st['their_offer'], st['role'] == 'buyer'
    if theirs and (theirs['price'] <= mine if buyer else theirs['price'] >= mine):
        return {'type': 'act', 'tool': 'accept_offer', 'args': {'offer_id': theirs['offer_id']}}
    price = round(mine * (0.9 if buyer else 1.1), 2)
    return {'type': 'act', 'tool': 'make_offer', 'args': {'price': price, 'note': 'from a bot <b>'}, 'then_wait': True}

async def participant(link: str, lag: list | None = None, limit: float = 120) -> dict:
    "Play one participant to the payoff page; `lag` collects seconds from each action to the server's answer."
    url = link.replace('http://', 'ws://').replace('/p/', '/ws/')
    sent_at, frames = None, []
    async with websockets.connect(url, max_size=2**22) as ws:
        async def step():
            nonlocal sent_at
            st = json.loads(await ws.recv())
            frames.append(st)
            if sent_at is not None and lag is not None: lag.append(time.monotonic() - sent_at)
            sent_at = None
            stage, msg = st['stage'], None
            if stage == 'payoff': return st
            if stage == 'consent': msg = {'type': 'consent', 'agree': True}
            elif stage == 'instructions': msg = {'type': 'quiz', 'answers': [q[2] for q in QUIZ]}
            elif stage == 'game' and st['over']: msg = {'type': 'next'}
            elif stage == 'game' and st['your_turn']: msg = move(st)
            if msg:
                sent_at = time.monotonic()
                await ws.send(json.dumps(msg))
        async def run():
            while True:
                if (done := await step()): return done
        done = await asyncio.wait_for(run(), limit)
    return {'payoff': done, 'frames': frames}
