"""mcmpart.gym.PlacementEnv: Gymnasium's checks, masked rollouts that end
in valid partitions, the reward's unit, the dead ends without SAT, seeds."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

import generated  # noqa: E402
import mcmpart  # noqa: E402
from mcmpart.gym import ENV_ID, PlacementEnv  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
# Every example problem the rollouts run on (BERT-large ones included: an
# episode there takes well under a second).
ROLLOUT_FILES = [
    "quickstart.mcm",
    "fast_last.mcm",
    "torus_big_corners.mcm",
    "mesh_step.mcm",
    "bert_ring36.mcm",
    "gpu_cluster_step.mcm",
]


def rollout(env: PlacementEnv, rng: np.random.Generator, seed=None):
    """One episode of uniformly random masked actions: (reward, info, steps)."""
    env.reset(seed=seed)
    steps = 0
    while True:
        mask = env.action_masks()
        assert mask.dtype == np.bool_ and mask.shape == (env.action_space.n,)
        assert mask.any(), "an empty mask with the episode still running"
        action = rng.choice(np.flatnonzero(mask))
        obs, reward, terminated, truncated, info = env.step(action)
        steps += 1
        assert not truncated
        assert env.observation_space.contains(obs)
        if terminated:
            if "partition" in info:
                assert obs["placed"].all(), "a finished episode has every node placed"
            return reward, info, steps
        assert reward == 0.0, "intermediate rewards are 0"


def test_check_env_passes():
    from gymnasium.utils.env_checker import check_env

    env = PlacementEnv(mcmpart.load(str(EXAMPLES / "quickstart.mcm")))
    check_env(env, skip_render_check=True)
    check_env(PlacementEnv(mcmpart.load(str(EXAMPLES / "fast_last.mcm")), sat=False), skip_render_check=True)


@pytest.mark.parametrize("name", ROLLOUT_FILES)
def test_masked_random_rollouts_end_in_valid_partitions(name):
    problem = mcmpart.load(str(EXAMPLES / name))
    env = PlacementEnv(problem, seed=0)
    rng = np.random.default_rng(7)
    episodes = 2 if "bert" in name or "gpu" in name else 20
    ids = [n["id"] for n in problem.nodes]
    for e in range(episodes):
        reward, info, steps = rollout(env, rng, seed=e)
        assert "dead_end" not in info, info
        partition = info["partition"]
        assert list(partition) == ids
        chips = [partition[i] for i in ids]
        assert problem.verify(chips) == [], f"episode {e} on {name} ended in an invalid partition"
        assert steps >= problem.num_nodes
        if "invalid" not in info:
            assert reward > 0.0


@pytest.mark.parametrize("name", generated.CASE_NAMES)
def test_on_generated_problems_check_env_passes_and_masked_rollouts_end_valid(name, tmp_path):
    from gymnasium.utils.env_checker import check_env

    g = generated.write(generated.by_name(name), tmp_path)
    problem = g.problem
    check_env(PlacementEnv(problem), skip_render_check=True)
    ids = [n["id"] for n in problem.nodes]
    rng = np.random.default_rng(generated.seed_shift())
    env = PlacementEnv(problem, seed=0)
    for e in range(12):
        reward, info, _ = rollout(env, rng, seed=e)
        assert "dead_end" not in info, info
        chips = [info["partition"][i] for i in ids]
        assert problem.verify(chips) == [], f"episode {e} on {name} ended in an invalid partition"
        if "invalid" in info:
            assert reward == 0.0 and not problem.evaluate(chips).valid
        else:
            # The score (one over the cost, either objective) over greedy's.
            assert reward == pytest.approx(1.0 / (problem.evaluate(chips).cost * env.greedy_score), rel=1e-9)
    # Without SAT an episode ends in a valid partition or in a dead end.
    plain = PlacementEnv(problem, sat=False)
    for _ in range(6):
        reward, info, _ = rollout(plain, rng)
        if info.get("dead_end"):
            assert reward == -1.0 and "partition" not in info
        else:
            assert problem.verify([info["partition"][i] for i in ids]) == []


def test_the_reward_is_the_score_over_greedys():
    problem = mcmpart.load(str(EXAMPLES / "fast_last.mcm"))
    greedy = problem.solve(strategy="greedy", budget=1, seed=0).partition
    chips = list(greedy.chips)
    env = PlacementEnv(problem)
    env.reset()
    order = env.order
    for k, u in enumerate(order):
        assert env.action_masks()[chips[u]], "greedy's chip is in the mask"
        _, reward, terminated, _, info = env.step(chips[u])
        assert terminated == (k == len(order) - 1)
    assert reward == pytest.approx(1.0, rel=1e-12)
    assert env.greedy_score == pytest.approx(problem.evaluate(chips).value, rel=1e-12)


def test_step_time_rewards_are_greedys_step_time_over_the_partitions():
    problem = mcmpart.load(str(EXAMPLES / "mesh_step.mcm"))
    env = PlacementEnv(problem)
    assert env.reward_unit == "greedy"
    rng = np.random.default_rng(3)
    for _ in range(50):
        reward, info, _ = rollout(env, rng)
        chips = [info["partition"][n["id"]] for n in problem.nodes]
        if "invalid" not in info:
            break
        # Valid under the rules, over a chip's memory at run time.
        assert reward == 0.0 and not problem.evaluate(chips).valid
    else:
        pytest.fail("no rollout valid at evaluation")
    greedy = problem.evaluate(list(problem.solve(strategy="greedy", budget=1, seed=0).partition.chips))
    mine = problem.evaluate(chips)
    assert reward == pytest.approx(greedy.value / mine.value, rel=1e-9)


def test_the_objective_can_be_chosen():
    problem = mcmpart.load(str(EXAMPLES / "fast_last.mcm"))
    with pytest.raises(ValueError, match="objectives are"):
        PlacementEnv(problem, objective="latency")
    env = PlacementEnv(problem, objective="step_time")
    assert env.greedy_score > 0


def test_an_order_is_followed_and_checked():
    problem = mcmpart.load(str(EXAMPLES / "quickstart.mcm"))
    n = problem.num_nodes
    order = list(reversed(range(n)))
    env = PlacementEnv(problem, order=order)
    obs, _ = env.reset()
    assert env.order == order
    assert obs["node"] == order[0]
    with pytest.raises(ValueError, match="twice"):
        PlacementEnv(problem, order=[0] * n)
    with pytest.raises(ValueError, match="each placed node once"):
        PlacementEnv(problem, order=order[:-1])


def test_the_observation_follows_the_domains():
    problem = mcmpart.load(str(EXAMPLES / "fast_last.mcm"))
    env = PlacementEnv(problem)
    obs, _ = env.reset()
    solver = problem.solver()
    assert (obs["domains"].astype(bool) == solver.masks()).all()
    u = int(obs["node"])
    chip = int(np.flatnonzero(env.action_masks())[-1])
    obs, *_ = env.step(chip)
    solver.set_domain(u, chip)
    assert (obs["domains"].astype(bool) == solver.masks()).all()
    assert obs["placed"][u] == 1 and obs["placed"].sum() == 1


@pytest.mark.parametrize("chips", [63, 64, 65, 128])
def test_the_masks_are_right_on_packages_of_a_word_of_chips_and_more(chips):
    # A domain of 64 chips is a machine word of ones: the first observation
    # must still show it (it once showed none).
    problem = mcmpart.compile(
        "use std::placement::{acyclic_flow}\nuse std::topologies::ring\n"
        f"let t = ring(n = {chips}, memory = 1 MiB, compute = 1 TFLOP/s, bandwidth = 1 GB/s)\n"
        "let g = graph { a { flops = 1 GFLOP } -> b { flops = 1 GFLOP } -> c { flops = 1 GFLOP } }\n"
        "partition g onto t {\n    require acyclic_flow\n    maximize throughput\n}\n"
    )
    env = PlacementEnv(problem)
    obs, _ = env.reset()
    assert (obs["domains"].astype(bool) == problem.solver().masks()).all()
    assert env.action_masks().sum() == chips
    obs, *_ = env.step(chips - 2)
    solver = problem.solver()
    solver.set_domain(env.order[0], chips - 2)
    assert (obs["domains"].astype(bool) == solver.masks()).all()


def test_a_masked_action_ends_the_episode_with_the_penalty():
    problem = mcmpart.load(str(EXAMPLES / "quickstart.mcm"))
    env = PlacementEnv(problem, dead_end_reward=-2.5)
    env.reset()
    mask = env.action_masks()
    if mask.all():
        # Place nodes until one has a chip it may not take.
        while env.action_masks().all():
            env.step(0)
        mask = env.action_masks()
    bad = int(np.flatnonzero(~mask)[0])
    _, reward, terminated, _, info = env.step(bad)
    assert terminated and reward == -2.5
    assert info["dead_end"] and info["masked"] == bad


# Six nodes of 2, 2, 3, 3, 3 and 2 MiB of weights on three chips of 5 MiB:
# every valid partition pairs a 3 with a 2 on each chip. Putting both first
# nodes on one chip is a dead end that the memory propagator (which checks
# each chip's room, not the sum) finds only a decision later, whatever that
# decision is.
DEAD_END_NODES = [2, 2, 3, 3, 3, 2]
DEAD_END_SOURCE = """
use std::placement::{memory_capacity}
use std::topologies::ring

let package = ring(n = 3, memory = 5 MiB, compute = 1 TFLOP/s, bandwidth = 10 GB/s)
let g = graph("six.json")

partition g onto package {
    require memory_capacity
    maximize throughput
}
"""


def dead_end_problem(tmp_path):
    nodes = [
        {"id": f"n{i}", "op": "linear", "flops": 1_000_000, "params": mib << 20, "output_bytes": 4096}
        for i, mib in enumerate(DEAD_END_NODES)
    ]
    edges = [{"from": f"n{i}", "to": f"n{i + 1}"} for i in range(len(nodes) - 1)]
    (tmp_path / "six.json").write_text(json.dumps({"name": "six", "nodes": nodes, "edges": edges}))
    (tmp_path / "six.mcm").write_text(DEAD_END_SOURCE)
    return mcmpart.load(str(tmp_path / "six.mcm"))


def test_without_sat_a_conflict_ends_the_episode_and_with_it_the_episode_goes_on(tmp_path):
    problem = dead_end_problem(tmp_path)
    ids = [n["id"] for n in problem.nodes]
    plain = PlacementEnv(problem, sat=False)
    backed = PlacementEnv(problem, sat=True)

    # Both first nodes on chip 0: the third node's step meets the conflict.
    for env in (plain, backed):
        env.reset()
        for chip in (0, 0):
            _, reward, terminated, _, info = env.step(chip)
            assert not terminated and reward == 0.0 and info == {}
        assert env.action_masks().tolist() == [False, True, True]
    _, reward, terminated, _, info = plain.step(1)
    assert terminated and reward == -1.0
    assert info == {"dead_end": True}
    _, reward, terminated, _, info = backed.step(1)
    assert not terminated and info["backjumped"] == 1
    # The SAT backing undid the second node's decision and took chip 0 from it.
    obs = backed._obs()
    assert obs["placed"].tolist() == [1, 0, 0, 0, 0, 0]
    assert backed.action_masks().tolist() == [False, True, True]
    obs, _ = backed.reset()
    assert obs["placed"].tolist() == [0] * 6

    # Random masked rollouts: without SAT some end in the dead end, with it none.
    rng = np.random.default_rng(0)
    dead_ends = 0
    for _ in range(30):
        reward, info, _ = rollout(plain, rng)
        if info.get("dead_end"):
            dead_ends += 1
            assert reward == -1.0 and "partition" not in info
        else:
            assert problem.verify([info["partition"][i] for i in ids]) == []
        reward, info, _ = rollout(backed, rng)
        assert "dead_end" not in info
        assert problem.verify([info["partition"][i] for i in ids]) == []
    assert dead_ends > 0, "no rollout without SAT met the dead end"


def test_seeds_make_episodes_reproducible():
    problem = mcmpart.load(str(EXAMPLES / "fast_last.mcm"))

    def episode(seed):
        env = PlacementEnv(problem, seed=seed)
        env.reset(seed=seed)
        actions = []
        while True:
            a = env.action_space.sample(mask=env.action_masks().astype(np.int8))
            actions.append(int(a))
            _, reward, terminated, _, info = env.step(a)
            if terminated:
                return actions, reward, info["partition"]

    assert episode(5) == episode(5)


def test_make_and_make_vec():
    path = str(EXAMPLES / "quickstart.mcm")
    env = gym.make(ENV_ID, problem=path)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    envs = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="sync", problem=path)
    obs, _ = envs.reset(seed=0)
    assert obs["domains"].shape[0] == 2
    masks = np.stack(envs.call("action_masks"))
    actions = np.array([np.flatnonzero(m)[0] for m in masks])
    obs, rewards, terminated, truncated, infos = envs.step(actions)
    assert rewards.shape == (2,)
    envs.close()
