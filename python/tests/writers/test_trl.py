"""gigscope.trl with TRL's real GRPOTrainer: a tiny Qwen2 model with random weights and a word-level tokenizer
trained here with `tokenizers` (nothing downloaded), trained on the CPU for a few steps while `watch` writes
the run; the run is then opened with the gigscope binary.
"""

import json
import math
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("WANDB_DISABLED", "true")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

torch = pytest.importorskip("torch")
trl = pytest.importorskip("trl")

from datasets import Dataset  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers, trainers  # noqa: E402
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from gigscope.trl import watch  # noqa: E402
from test_verl import gigscope  # noqa: E402

PROMPTS = [
    "find a red shirt under two dollars",
    "buy one small cup",
    "quiet please find blue shoes",
    "find the large green hat",
    "buy two apple or banana",
    "quiet find a cup with color",
]
CORPUS = PROMPTS + ["cherry yes no please item size price dollars with not over three four loud"]


def build_tokenizer():
    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.train_from_iterator(
        CORPUS, trainers.WordLevelTrainer(special_tokens=["<pad>", "<eos>", "<unk>"], min_frequency=1)
    )
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")


def build_model(tokenizer):
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    return Qwen2ForCausalLM(config)


def length_reward(completions, **kwargs):
    return [len(c.split()) / 4.0 for c in completions]


def keyword_reward(completions, prompts, **kwargs):
    """Prompt words repeated in the completion (at most 2); None (unscored) for "quiet" prompts."""
    return [
        None if "quiet" in p else float(min(len(set(p.split()) & set(c.split())), 2))
        for p, c in zip(prompts, completions)
    ]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("trl")
    tokenizer = build_tokenizer()
    args = GRPOConfig(
        output_dir=str(out / "trainer"),
        use_cpu=True,
        seed=3,
        report_to="none",
        logging_steps=1,
        save_strategy="no",
        max_steps=3,
        per_device_train_batch_size=4,
        gradient_accumulation_steps=2,
        num_generations=4,
        max_completion_length=6,
        temperature=1.0,
        learning_rate=1e-2,
        beta=0.05,
        num_iterations=2,
        reward_weights=[1.0, 0.5],
        disable_tqdm=True,
    )
    # Saved and passed by path: with beta != 0 TRL loads the reference model from the same place.
    model_dir = out / "model"
    build_model(tokenizer).save_pretrained(model_dir)
    trainer = GRPOTrainer(
        model=str(model_dir),
        processing_class=tokenizer,
        reward_funcs=[length_reward, keyword_reward],
        args=args,
        train_dataset=Dataset.from_list([{"prompt": p} for p in PROMPTS]),
    )
    # TRL's own advantages as it computed them, to compare with what the run recomputes.
    seen = []
    generate = trainer._generate_and_score_completions

    def spy(batch):
        output = generate(batch)
        if trainer.model.training:
            seen.append(output["advantages"].detach().clone().numpy())
        return output

    trainer._generate_and_score_completions = spy
    run = out / "run"
    writer = watch(trainer, run)
    trainer.train()
    assert writer.last_error is None, writer.last_error
    return run, tokenizer, np.concatenate(seen)


def episodes(run):
    with open(run / "episodes.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_the_run_holds_grpo_groups_rewards_and_trls_advantages(trained):
    run, _, trl_advantages = trained
    eps = episodes(run)
    assert len(eps) == len(trl_advantages) > 0
    assert [e["advantages"][0] for e in eps] == pytest.approx(trl_advantages.tolist(), abs=0)
    groups = {}
    for e in eps:
        groups.setdefault(e["group"], []).append(e)
    assert all(len(g) == 4 for g in groups.values())
    assert all(len({g_e["task"]["instruction"] for g_e in g}) == 1 for g in groups.values())
    assert all(set(e["outcome"]["rewards"]) == {"length_reward", "keyword_reward"} for e in eps)
    quiet = [e for e in eps if "quiet" in e["task"]["instruction"]]
    assert all(e["outcome"]["rewards"]["keyword_reward"] is None for e in quiet)
    meta = json.loads((run / "run.json").read_text())
    assert meta["advantage"] == {
        "estimator": "grpo",
        "scale_rewards": "group",
        "reward_weights": [1.0, 0.5],
        "aggregation": "sum_then_normalize",
    }


def test_gigscope_recomputes_trls_advantages_from_the_run(trained):
    run, _, trl_advantages = trained
    rows = [json.loads(line) for line in gigscope("advantages", run, "--format", "jsonl").splitlines()]
    by_episode = {r["episode"]: r for r in rows}
    eps = episodes(run)
    assert len(by_episode) == len(eps)
    for e, expected in zip(eps, trl_advantages.tolist()):
        assert math.isclose(by_episode[e["id"]]["advantage"], expected, abs_tol=1e-5), (e["id"], expected)


def test_every_completion_has_its_tokens_with_trls_channels(trained):
    run, tokenizer, _ = trained
    eps = episodes(run)
    for e in eps:
        rows = [json.loads(line) for line in gigscope("tokens", run, "--episode", e["id"], "--format", "jsonl").splitlines()]
        assert rows and {r["step"] for r in rows} == {0}
        ids = [r["id"] for r in rows]
        assert tokenizer.decode(ids, skip_special_tokens=True) == e["steps"][0]["action"]
        assert [r["text"] for r in rows] == [tokenizer.decode([i]) for i in ids]
        assert sum(r["mask"] for r in rows) == e["steps"][0]["tokens"]
        for r in rows:
            assert np.float32(r["advantage"]) == np.float32(e["advantages"][0])
            for channel in ("old_logprob", "ref_logprob", "entropy", "ratio", "kl_k1", "kl_k3"):
                assert isinstance(r[channel], float), (channel, r)
            assert r["old_logprob"] <= 0 and r["ref_logprob"] <= 0 and r["entropy"] >= 0
            assert isinstance(r["clipped"], bool)
            assert r["rollout_logprob"] is None and r["mismatch"] is None, "no sampler log-probabilities without vLLM"
            # The first update over a batch: the ratio to the log-probabilities of the same weights is 1.
            assert r["ratio"] == pytest.approx(1.0, abs=1e-3)
            assert r["effective_weight"] == (r["advantage"] if r["mask"] and not r["clipped"] else 0.0)
