"""The strict thread of a lore thread mbox is found in linear work (issue 21, finding 4).

liblore's walk reads every message's headers once per round and adds about one generation a
round: a 2,000-message reply chain in reverse order took messages² header reads and never
finished (main walked mboxes up to 2,000 messages). The chain case runs in a fresh interpreter
under a generous hang guard (60 s; it takes a few seconds now, and by liblore's walk
50/100/200 messages took 0.9/3.4/13.6 s, so 2,000 would take over 20 minutes): no case asserts
on speed (bench/strict_thread.py measures it).
The walk must still find the thread liblore finds: checked against liblore on random graphs.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st
from liblore.utils import get_strict_thread, parse_message

from tests.conftest import PROJECT
from tests.support.public_inbox import make_message
from triagebot.ingest.lore_liblore import strict_thread

HANG_GUARD = 60  # seconds; a hang guard, not a speed target

CHAIN = """
    from tests.support.public_inbox import make_message
    from triagebot.ingest.lore_liblore import strict_thread
    # newest first, as an attacker orders it; each reply also names 300 ids no message carries
    raws = []
    for k in range(1998, 0, -1):
        junk = [f"junk{j}.{k}@nowhere" for j in range(300)]
        raws.append(make_message("Re: chain", f"reply {k}\\n", msgid=f"m{k}@chain",
                                 in_reply_to=f"m{k - 1}@chain", references=junk, date="Mon, 1 Dec 2025 10:00:00 +0000"))
    raws.append(make_message("chain", "root\\n", msgid="m0@chain", date="Mon, 1 Dec 2025 09:00:00 +0000"))
    raws.append(make_message("Re: chain", "same subject, no references\\n", msgid="other@chain"))
    for target in ("m1998@chain", "m0@chain", "m1000@chain"):
        kept = strict_thread(raws, target)
        assert len(kept) == 1999, len(kept)  # of 2,000: the one unrelated is left out
        assert raws[-1] not in kept
    print("ok")
"""


def test_a_2000_message_reverse_reply_chain_is_walked_whole():
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(CHAIN)], cwd=PROJECT,
                          capture_output=True, text=True, timeout=HANG_GUARD)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


# A random little graph: message i carries id `m{i}` (or none), and names some of the other
# messages' ids and some ids no message carries (`gone{j}`), in In-Reply-To or References.
_GRAPH = st.integers(min_value=1, max_value=9).flatmap(lambda size: st.tuples(
    st.just(size),
    st.lists(st.tuples(st.lists(st.sampled_from([f"m{i}" for i in range(size)] + ["gone0", "gone1", "gone2"]),
                                max_size=3),
                       st.booleans()),  # carries no Message-ID
             min_size=size, max_size=size),
    st.permutations(list(range(size))),
    st.sampled_from(["m0", "m1", "gone0"]),
))


@settings(max_examples=300, deadline=None)
@given(_GRAPH)
def test_the_walk_finds_the_thread_liblore_finds(graph):
    # a regression guard for the replacement (main used liblore's walk itself)
    size, links, order, target = graph
    raws = []
    for index in order:
        names, anonymous = links[index]
        raws.append(make_message("Re: x", f"{index}\n", msgid="" if anonymous else f"m{index}@t",
                                 in_reply_to=f"{names[0]}@t" if names else None,
                                 references=[f"{name}@t" for name in names[1:]],
                                 date="Mon, 1 Dec 2025 10:00:00 +0000"))
    parsed = [parse_message(raw) for raw in raws]
    theirs = get_strict_thread(parsed, f"{target}@t")
    want = [raw for raw, message in zip(raws, parsed, strict=True)
            if theirs is not None and any(message is kept for kept in theirs)]
    assert strict_thread(raws, f"<{target}@t>") == (want or raws)
