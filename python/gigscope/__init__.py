"""gigscope in Python: runs read and advantages computed by gigscope's own Rust engine.

    import gigscope
    run = gigscope.open("runs/webshop-gigpo")          # layout detected, as the command line does
    adv = run.advantages(estimator="grpo", gamma=0.9)  # pyarrow.Table, the columns of
                                                       # `gigscope advantages --format jsonl`
    adv.to_pandas()
    run.render("step.svg", episode=adv["episode"][0].as_py(), step=0)  # what `gigscope render` draws

Settings are keyword arguments named as the command line's flags (``--invalid-penalty`` is
``invalid_penalty``) and are parsed by the command line itself, so every flag works with the same meaning,
defaults (the run's recorded settings first) and errors. Tables come from the engine through the Arrow C data
interface, column by column.

Importing this package loads neither the native extension nor pyarrow (the integrations beside it, such as
``gigscope.verl``, run inside training jobs that need neither): both load on the first ``open()``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

if TYPE_CHECKING:
    import pyarrow

    from gigscope import _native

__all__ = ["GigscopeError", "Run", "open"]


class GigscopeError(Exception):
    """A run that cannot be read, settings the engine refuses, or a broken truth file.

    The message is the engine's, with its causes, as the command line prints it (file, line, field).
    """


Setting = Union[str, int, float, bool, Sequence[float], None]


def _flag_words(settings: Dict[str, Setting]) -> List[str]:
    """Keyword arguments as the command line's flag words: ``gamma=0.9`` is ``--gamma=0.9``."""
    words = []
    for name, value in settings.items():
        if value is None:
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (list, tuple)):
            text = ",".join(repr(float(v)) for v in value)
        elif isinstance(value, float):
            # repr is the shortest text that reads back as the same double.
            text = repr(value)
        else:
            text = str(value)
        words.append(f"--{name.replace('_', '-')}={text}")
    return words


class Run:
    """A run read once by the engine; every table is computed from that reading."""

    def __init__(self, native: "_native.Run", open_flags: List[str]) -> None:
        self._native = native
        # How it was opened (``--from``, ``--group-size``), for :meth:`render`, which reads it as the TUI does.
        self._open_flags = open_flags

    @property
    def path(self) -> str:
        """The run's directory."""
        return os.fspath(self._native.path)

    @property
    def layout(self) -> str:
        """The layout it was read as: ``gigscope-run/1``, ``verl rollout dump``, ..."""
        return self._native.layout

    def __len__(self) -> int:
        return len(self._native)

    def __repr__(self) -> str:
        return f"gigscope.Run({self.path!r}, layout={self.layout!r}, episodes={len(self)})"

    def episodes(self) -> "pyarrow.Table":
        """One row per episode: episode, group, iteration, task, instruction, steps, success, score,
        total_reward."""
        return self._native.episodes()

    def steps(self) -> "pyarrow.Table":
        """One row per step: episode, group, iteration, step, observation, anchor, action, reward, valid, page,
        state (the environment's full state, hashed, where the step records it), tokens, logprob, thought,
        trainer_advantage (what the trainer recorded, when it did)."""
        return self._native.steps()

    def advantages(
        self,
        *,
        estimator: Optional[str] = None,
        gamma: Optional[float] = None,
        omega: Optional[float] = None,
        norm: Optional[str] = None,
        pooling: Optional[str] = None,
        invalid_penalty: Optional[float] = None,
        anchor: Optional[str] = None,  # exact, similarity, page, step or state
        similarity: Optional[float] = None,
        success_reward: Optional[bool] = None,
        efficiency_alpha1: Optional[float] = None,
        efficiency_alpha2: Optional[float] = None,
        scale_rewards: Optional[str] = None,
        reward_weights: Optional[Sequence[float]] = None,
        aggregation: Optional[str] = None,
        **family: Setting,
    ) -> "pyarrow.Table":
        """Every step's advantages: the rows and columns of ``gigscope advantages --format jsonl`` (episode,
        group, iteration, step, reward, return, episode_advantage, step_advantage, advantage, step_group,
        step_group_size, stored_advantage, delta; reward and return null for an unscored TRL completion).
        Keywords are the command's flags; the estimator family's (``hgpo_history``,
        ``graph_gamma``, ``psc_alpha``, ...) are taken too. A keyword no flag has is a ``TypeError``."""
        settings = dict(locals())
        del settings["self"], settings["family"]
        return self._native.advantages(_flag_words({**settings, **family}))

    def groups(self, **settings: Setting) -> "pyarrow.Table":
        """One row per episode group under the same settings as :meth:`advantages`: group, episodes, steps,
        success_rate, mean, std (of the episode-baseline pool), pool_size, zero_variance, step_groups,
        singleton_step_groups."""
        return self._native.groups(_flag_words(settings))

    def stats(self, **settings: Setting) -> Dict[str, Any]:
        """What ``gigscope stats --json`` prints, under the same settings as :meth:`advantages`."""
        import json

        return json.loads(self._native.stats_json(_flag_words(settings)))

    def truth(self) -> "pyarrow.Table":
        """The Monte-Carlo ground truth rows of every truth file of the run (``truth/iteration-<I>.jsonl``):
        iteration, episode, step, group, q, v, a_star, q_se, v_se, k. Empty when the run has none."""
        return self._native.truth()[0]

    def truth_agreements(self) -> "pyarrow.Table":
        """How each estimator agreed with the ground truth, per truth file: iteration, estimator, states,
        spearman, sign_agreement, scale, rmse, error."""
        return self._native.truth()[1]

    def tokens(self, episode: str, step: Optional[int] = None) -> "pyarrow.Table":
        """One row per token of ``episode``'s step ``step`` (every step with tokens when ``None``) from the
        run's token store (``tokens/``): the columns of ``gigscope tokens --format jsonl`` in its order (step,
        index, id, text, offset, mask, advantage, old_logprob, rollout_logprob, ref_logprob, entropy, ratio,
        clipped, mismatch, mismatch_weight, kl_k1, kl_k3, effective_weight). The channels and derived values are
        float32, exactly as stored, null where the trainer recorded none (never 0); ``clipped`` is a boolean;
        ``text`` is null for an id the tokenizer did not know. An episode or step without tokens, or a record
        that cannot be read, is a :class:`GigscopeError` naming the file and the record."""
        return self._native.tokens(episode, step)

    def render(
        self,
        out: Union[str, "os.PathLike[str]"],
        *,
        episode: Optional[str] = None,
        step: Optional[int] = None,
        overview: bool = False,
        size: Union[Tuple[int, int], str, None] = None,
        theme: Optional[str] = None,
        **settings: Setting,
    ) -> None:
        """Write what the TUI shows to ``out`` (``.svg`` or ``.html``), as ``gigscope render`` writes it, by the
        same code: ``episode``'s view with step ``step`` (from 0) selected and that step's anchor-state group, or
        with ``overview=True`` the run's overview and its charts. ``size`` is the terminal drawn for, ``(width,
        height)`` or ``"WIDTHxHEIGHT"`` (default 120x40, at least 80x24); ``theme`` is ``dark``, ``light`` or
        ``high-contrast``; further keywords are the advantage settings of :meth:`advantages` (``estimator``,
        ``gamma``, ...). The run directory is read again, as the TUI reads it. An unknown episode or step, a
        file name that is neither ``.svg`` nor ``.html``, or a file that cannot be written is a
        :class:`GigscopeError` with the command's message; the file is written whole or not at all."""
        from gigscope import _native

        if isinstance(size, tuple):
            size = f"{size[0]}x{size[1]}"
        words = [os.fspath(self._native.path), f"--out={os.fspath(out)}"]
        words += _flag_words({"episode": episode, "step": step, "size": size, "theme": theme})
        if overview:
            words.append("--overview")
        _native.render(words + self._open_flags + _flag_words(settings))


def open(
    path: Union[str, "os.PathLike[str]"],
    source: Optional[str] = None,
    group_size: Optional[int] = None,
) -> Run:
    """Read the run in ``path``: any layout gigscope reads (its own, verl-agent exports, verl dumps, TRL logs,
    converted runs), detected as the command line detects it. ``source`` forces a layout (the command line's
    ``--from``: ``gigscope``, ``verl``, ``trl``); ``group_size`` is TRL's rows per group (``--group-size``).
    Broken lines are skipped with a warning (``gigscope validate`` lists them); a directory holding no run is
    a :class:`GigscopeError`."""
    from gigscope import _native

    flags = _flag_words({"from": source, "group_size": group_size})
    return Run(_native.open(os.fspath(path), flags), flags)
