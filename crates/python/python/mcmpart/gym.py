"""A Gymnasium environment for placement with the solver's masks.

``PlacementEnv(problem)`` places one node a step, in a topological order
(or the order given); the action is a chip, ``action_masks()`` the node's
domain after propagation (the convention of sb3-contrib's MaskablePPO), the
observation a ``Dict`` of the graph's node features, every node's current
domain, which nodes are placed and the node to place now. The reward is 0
until the last step, where it is the finished partition's score over
greedy's: throughput / greedy's throughput under ``maximize throughput``,
greedy's step time / its step time under ``minimize step_time`` (above 1:
better than greedy). When greedy's own partition fails at evaluation (the
dynamic memory check), the unit is the lower bound's score instead
(``reward_unit == "bound"``; rewards are then at most 1).

With the SAT backing on (the default) every episode ends in a valid
partition: a chip that propagation later proves a dead end makes the SAT
backing undo the decisions back to the one that causes it and exclude its
chip (``info["backjumped"]``, the decisions undone), and the steps go on
from the first node no longer placed. With it off, such a step ends the
episode with ``dead_end_reward`` and ``info["dead_end"] = True``. A chip
outside the mask ends the episode the same way, with ``info["masked"]``.

The step loop runs in Rust (``mcmpart._native.EnvCore``): a step is one
call that decides, propagates and rewrites the rows of the domains that
changed.
"""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence, Union

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from . import _native

__all__ = ["PlacementEnv", "ENV_ID"]

#: The id ``gymnasium.make`` and ``gymnasium.make_vec`` know the env by.
ENV_ID = "mcmpart/Placement-v0"

_PLACED, _BACKJUMPED, _DEAD_END, _MASKED = 0, 1, 2, 3


class PlacementEnv(gym.Env):
    """Places a problem's nodes one a step; see the module's doc.

    ``problem``: a ``mcmpart.Problem`` or the path of a ``.mcm`` file.
    ``objective``: ``"throughput"`` or ``"step_time"`` in place of the
    problem's own. ``order``: node indices or ids, each placed node once.
    ``sat``: the solver's SAT backing. ``seed``: seeds the action space's
    sampling (the env itself draws nothing: the same actions give the same
    episode). ``dead_end_reward``: the reward of a step that ends the
    episode without a partition.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        problem: Union["_native.Problem", str, os.PathLike],
        objective: Optional[str] = None,
        order: Optional[Sequence[Union[int, str]]] = None,
        sat: bool = True,
        seed: Optional[int] = None,
        dead_end_reward: float = -1.0,
    ) -> None:
        super().__init__()
        if isinstance(problem, (str, os.PathLike)):
            problem = _native.load(os.fspath(problem))
        self.problem = problem
        self.sat = sat
        self.dead_end_reward = float(dead_end_reward)
        self._core = _native.EnvCore(problem, None if order is None else list(order), sat, objective)
        n, chips = self._core.num_nodes, self._core.num_chips
        self._features = np.ascontiguousarray(problem.node_features(), dtype=np.float32)
        self._ids = [node["id"] for node in problem.nodes]
        self.action_space = spaces.Discrete(chips, seed=seed)
        self.observation_space = spaces.Dict(
            {
                "node_features": spaces.Box(-np.inf, np.inf, self._features.shape, np.float32),
                "domains": spaces.MultiBinary([n, chips]),
                "placed": spaces.MultiBinary(n),
                "node": spaces.Discrete(n),
            },
            seed=seed,
        )
        self._domains = self._core.domains
        self._placed = self._core.placed

    @property
    def greedy_score(self) -> float:
        """The rewards' unit: greedy's score (throughput, or steps per
        second), or the lower bound's when ``reward_unit`` is ``"bound"``."""
        return self._core.greedy_score

    @property
    def reward_unit(self) -> str:
        """``"greedy"``, or ``"bound"`` when greedy's partition fails at
        evaluation (the dynamic memory check): the rewards are then the
        score over the lower bound's (at most 1)."""
        return self._core.reward_unit

    @property
    def order(self) -> list:
        """The node indices in the order the episode places them."""
        return self._core.order

    def _obs(self) -> dict:
        node = self._core.node
        return {
            # A copy though it never changes: Gymnasium's checker requires
            # that no two observations share an object.
            "node_features": self._features.copy(),
            "domains": self._domains.copy(),
            "placed": self._placed.copy(),
            "node": np.int64(0 if node is None else node),
        }

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        super().reset(seed=seed)
        if seed is not None:
            self.action_space.seed(seed)
        self._core.reset()
        return self._obs(), {}

    def action_masks(self) -> np.ndarray:
        """The chips the current node may take (np.bool_ [num_chips]); all
        False once the episode is over."""
        node = self._core.node
        if node is None:
            return np.zeros(self._core.num_chips, dtype=np.bool_)
        return self._domains[node].astype(np.bool_)

    def step(self, action):
        what, undone = self._core.step(int(action))
        info: dict[str, Any] = {}
        reward = 0.0
        terminated = False
        if what == _BACKJUMPED:
            info["backjumped"] = undone
        elif what in (_DEAD_END, _MASKED):
            info["dead_end"] = True
            if what == _MASKED:
                info["masked"] = int(action)
            reward = self.dead_end_reward
            terminated = True
        if not terminated and self._core.done:
            terminated = True
            chips = self._core.partition()
            info["partition"] = dict(zip(self._ids, chips))
            score, why = self._core.reward()
            if score is None:
                # Valid under the rules, refused at evaluation (the dynamic
                # memory check, an external evaluator).
                info["invalid"] = why
                reward = 0.0
            else:
                reward = float(score)
        return self._obs(), reward, terminated, False, info


def _register() -> None:
    if ENV_ID not in gym.registry:
        gym.register(id=ENV_ID, entry_point=PlacementEnv)


_register()
