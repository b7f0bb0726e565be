"""The arena planner: buffers alive at the same time never share a byte, and reuse happens."""

from hypothesis import given, settings
from hypothesis import strategies as st

from onnxc.lowering.plan_memory import ALIGNMENT, _Buffer, plan_offsets

lifetimes = st.lists(
    st.tuples(st.integers(1, 5000), st.integers(0, 40), st.integers(0, 10)),
    min_size=1,
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(lifetimes)
def test_live_buffers_never_overlap(specs):
    buffers = [_Buffer(None, size, start, start + length) for size, start, length in specs]
    arena = plan_offsets(buffers)
    for b in buffers:
        assert b.offset % ALIGNMENT == 0
        assert b.offset + b.size <= arena
    for i, a in enumerate(buffers):
        for b in buffers[i + 1 :]:
            live_together = a.start <= b.end and b.start <= a.end
            share_bytes = a.offset < b.offset + b.size and b.offset < a.offset + a.size
            assert not (live_together and share_bytes)


def test_disjoint_lifetimes_share_one_slot():
    buffers = [_Buffer(None, 1000, i, i) for i in range(10)]
    assert plan_offsets(buffers) == 1024
    assert {b.offset for b in buffers} == {0}
