"""The screen's compiling children take runs of consecutive points, which share most of their
kernels, and together every point exactly once."""

from controller.screening.worker import contiguous_shard


def test_the_shards_are_consecutive_runs_covering_every_point_once():
    points = list(range(486))
    shards = [contiguous_shard(points, shard, 14) for shard in range(14)]
    assert [p for shard in shards for p in shard] == points
    assert {len(shard) for shard in shards} == {34, 35}
    assert all(shard == list(range(shard[0], shard[-1] + 1)) for shard in shards)


def test_more_children_than_points_leaves_some_idle():
    shards = [contiguous_shard([0, 1, 2], shard, 5) for shard in range(5)]
    assert shards == [[0], [1], [2], [], []]
