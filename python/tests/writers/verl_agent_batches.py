"""Training batches built the way verl-agent's rollout builds them, from small simulated environments.

- ``WordTokenizer``: a word-level tokenizer with verl's interface (``encode``, ``decode(ids,
  skip_special_tokens=True)``, ``batch_decode``, ``pad_token_id``, ``eos_token_id``) and Qwen-like chat
  special tokens.
- ``WebShopLike`` / ``AlfWorldLike``: text environments whose pages and rewards follow verl-agent's WebShop
  (reward 10 when the bought item is right, else 0; anchor = the current page) and ALFWorld (reward 10 on
  success; anchor = the raw observation) wrappers; actions are parsed from ``<action>…</action>``, anything
  else is an invalid action (``is_action_valid`` false, the environment stays where it was).
- ``rollout``: verl-agent's ``vanilla_multi_turn_loop``: ``train_batch_size`` tasks repeated ``n`` times, one
  ``uid`` per group of ``n`` consecutive environments, one ``traj_uid`` per environment, every environment
  stepped each turn (rows of finished environments are inactive), prompts left-padded and responses
  right-padded to fixed lengths; then ``gather_rollout_data`` (only active rows, trajectory by trajectory,
  with ``episode_rewards``, ``episode_lengths``, ``tool_callings``).
"""

import uuid

import numpy as np

from verl_agent_oracle import Batch, objects

PAD, EOS, IM_START, IM_END = 0, 1, 2, 3


class WordTokenizer:
    """Whitespace-separated words; ids are handed out as words are first seen."""

    def __init__(self):
        self.vocab = {"<pad>": PAD, "<eos>": EOS, "<|im_start|>": IM_START, "<|im_end|>": IM_END}
        self.words = ["<pad>", "<eos>", "<|im_start|>", "<|im_end|>"]
        self.special = {PAD, EOS, IM_START, IM_END}
        self.pad_token_id = PAD
        self.eos_token_id = EOS

    def encode(self, text):
        ids = []
        for word in text.split():
            if word not in self.vocab:
                self.vocab[word] = len(self.words)
                self.words.append(word)
            ids.append(self.vocab[word])
        return ids

    def decode(self, ids, skip_special_tokens=True):
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        words = [self.words[int(i)] for i in ids if not (skip_special_tokens and int(i) in self.special)]
        return " ".join(words)

    def batch_decode(self, sequences, skip_special_tokens=True):
        return [self.decode(s, skip_special_tokens=skip_special_tokens) for s in sequences]

    def chat_prompt(self, text):
        """The prompt ids of a one-message chat with the generation prompt (Qwen-like template)."""
        return [IM_START] + self.encode("user " + text) + [IM_END, IM_START] + self.encode("assistant")


# ----------------------------------------------------------------------------------------------------------
# Environments
# ----------------------------------------------------------------------------------------------------------


def parse_action(response):
    """verl-agent's projection: the text between <action> and </action>, or None (invalid)."""
    start, end = response.find("<action>"), response.find("</action>")
    if start < 0 or end < start:
        return None
    action = response[start + len("<action>"):end].strip()
    return action or None


class WebShopLike:
    """Search → results → item (options) → buy. Pages are WebShop's [SEP]-joined text."""

    PRODUCTS = [
        ("B09QKP7XQL", "Blue Ice Hair Extension Clip In 18 Inch", "$25.99", ["color: blue", "color: black"]),
        ("B07HRFSNL4", "Long Straight Clip In Hair Extensions Natural", "$32.50", ["size: 18 inch", "size: 22 inch"]),
        ("B08ZJW9B4T", "Women's Wool Hiking Socks 3 Pack", "$14.99", ["size: medium", "size: large"]),
        ("B01N5IB20Q", "Merino Crew Socks Cushioned", "$19.00", ["size: medium", "size: large"]),
        ("B07Z8L7P2M", "Stainless Steel Water Bottle 32 oz", "$21.95", ["color: silver", "color: green"]),
        ("B0851KX3Y9", "Insulated Water Bottle Wide Mouth 20 oz", "$17.49", ["color: silver", "color: green"]),
    ]
    TASKS = [
        ("i need a long clip in hair extension in blue, price lower than 40.00 dollars",
         ["clip in hair extension", "blue hair extension"], "B09QKP7XQL", "color: blue"),
        ("i want wool hiking socks in size large, price lower than 30.00 dollars",
         ["wool hiking socks", "hiking socks large"], "B08ZJW9B4T", "size: large"),
        ("i am looking for a green insulated water bottle, price lower than 25.00 dollars",
         ["insulated water bottle", "green water bottle"], "B0851KX3Y9", "color: green"),
    ]
    name = "webshop"

    def __init__(self, task):
        self.instruction, self.queries, self.target, self.target_option = self.TASKS[task]
        self.page = "search"
        self.query = None
        self.item = None
        self.option = None

    def _results(self):
        words = set(self.query.split())
        ranked = sorted(self.PRODUCTS, key=lambda p: (-len(words & set(p[1].lower().split())), p[0]))
        return ranked[:3]

    def observation(self):
        head = f"WebShop [SEP] Instruction: [SEP] {self.instruction}"
        if self.page == "search":
            return head + " [SEP] Search"
        if self.page == "results":
            items = " [SEP] ".join(f"{p[0]} [SEP] {p[1]} [SEP] {p[2]}" for p in self._results())
            return f"{head} [SEP] Back to Search [SEP] Page 1 (Total results: 50) [SEP] Next > [SEP] {items}"
        product = next(p for p in self.PRODUCTS if p[0] == self.item)
        options = " [SEP] ".join(o.split(": ")[1] for o in product[3])
        chosen = f" [SEP] selected: {self.option}" if self.option else ""
        return (f"{head} [SEP] Back to Search [SEP] < Prev [SEP] {options} [SEP] {product[1]} [SEP] "
                f"Price: {product[2]} [SEP] Rating: N.A.{chosen} [SEP] Description [SEP] Features [SEP] Buy Now")

    def available_actions(self):
        if self.page == "search":
            return [f"search[{q}]" for q in self.queries]
        if self.page == "results":
            return ["click[back to search]", "click[next >]"] + [f"click[{p[0].lower()}]" for p in self._results()]
        product = next(p for p in self.PRODUCTS if p[0] == self.item)
        return ["click[back to search]", "click[< prev]"] + [f"click[{o.split(': ')[1]}]" for o in product[3]] + ["click[buy now]"]

    def step(self, action):
        """(reward, done, valid)."""
        if action is None or action not in self.available_actions():
            return 0.0, False, False
        if action.startswith("search["):
            self.page, self.query = "results", action[len("search["):-1]
        elif action == "click[back to search]":
            self.page, self.item, self.option = "search", None, None
        elif action == "click[< prev]":
            self.page, self.item, self.option = "results", None, None
        elif action == "click[next >]":
            pass
        elif self.page == "results":
            self.page, self.item = "item", action[len("click["):-1].upper()
        elif action == "click[buy now]":
            won = self.item == self.target and self.option == self.target_option
            return (10.0 if won else 0.0), True, True
        else:
            product = next(p for p in self.PRODUCTS if p[0] == self.item)
            value = action[len("click["):-1]
            self.option = next(o for o in product[3] if o.endswith(value))
        return 0.0, False, True

    def prompt(self, history, step):
        """verl-agent-like WebShop prompt: task, recent history, current page, admissible actions."""
        lines = [f"You are an expert autonomous agent operating in the WebShop e-commerce platform. "
                 f"Your task is to: {self.instruction}."]
        if history:
            lines.append(f"Prior to this step, you have already taken {step} step(s). Below are the most recent "
                         f"{len(history)} observations and the corresponding actions you took:")
            lines += [f"[Observation {k}: '{o}', Action {k}: '{a}']" for k, (o, a) in enumerate(history, 1)]
        lines.append(f"You are now at step {step + 1} and your current observation is: {self.observation()}.")
        lines.append("Your admissible actions of the current situation are: [" + ", ".join(self.available_actions()) + "].")
        lines.append("Think step by step inside <think> </think> tags, then give your action inside <action> </action> tags.")
        return "\n".join(lines)


class AlfWorldLike:
    """A kitchen with receptacles; take the object, (clean it), put it in the target."""

    TASKS = [
        ("put a clean mug in coffeemachine", "mug 1", "countertop 2", "coffeemachine 1", True),
        ("put some apple on diningtable", "apple 1", "fridge 1", "diningtable 1", False),
    ]
    PLACES = ["cabinet 1", "countertop 1", "countertop 2", "fridge 1", "sinkbasin 1", "coffeemachine 1", "diningtable 1"]
    name = "alfworld"

    def __init__(self, task):
        self.task, self.obj, self.source, self.target, self.needs_clean = self.TASKS[task]
        self.at = None
        self.opened = set()
        self.holding = None
        self.clean = False
        self.placed = False
        self.last = ("-= Welcome to TextWorld, ALFRED! =- You are in the middle of a room. Looking quickly around "
                     "you, you see a cabinet 1, a coffeemachine 1, a countertop 2, a countertop 1, a diningtable 1, "
                     f"a fridge 1, and a sinkbasin 1. Your task is to: {self.task}.")

    def observation(self):
        return self.last

    def available_actions(self):
        acts = [f"go to {p}" for p in self.PLACES if p != self.at] + ["look", "inventory"]
        if self.at in ("cabinet 1", "fridge 1"):
            acts.append(f"{'close' if self.at in self.opened else 'open'} {self.at}")
        if self.at == self.source and self.holding is None and (self.at not in ("fridge 1",) or self.at in self.opened):
            acts.append(f"take {self.obj} from {self.at}")
        if self.holding and self.at == "sinkbasin 1":
            acts.append(f"clean {self.obj} with sinkbasin 1")
        if self.holding and self.at == self.target:
            acts.append(f"move {self.obj} to {self.target}")
        return acts

    def _describe(self):
        if self.at in ("cabinet 1", "fridge 1") and self.at not in self.opened:
            return f"You arrive at {self.at}. The {self.at} is closed."
        things = {self.source: f"a {self.obj}, a butterknife 2" if self.holding is None else "a butterknife 2"}.get(self.at, "nothing")
        return f"You arrive at {self.at}. On the {self.at}, you see {things}."

    def step(self, action):
        if action is None or action not in self.available_actions():
            self.last = "Nothing happens."
            return 0.0, False, action is not None and action in ("look", "inventory")
        if action.startswith("go to "):
            self.at = action[len("go to "):]
            self.last = self._describe()
        elif action.startswith("open "):
            self.opened.add(self.at)
            self.last = f"You open the {self.at}. " + self._describe().split(". ", 1)[-1]
        elif action.startswith("close "):
            self.opened.discard(self.at)
            self.last = f"You close the {self.at}."
        elif action.startswith("take "):
            self.holding = self.obj
            self.last = f"You pick up the {self.obj} from the {self.at}."
        elif action.startswith("clean "):
            self.clean = True
            self.last = f"You clean the {self.obj} using the sinkbasin 1."
        elif action.startswith("move "):
            self.last = f"You move the {self.obj} to the {self.target}."
            if self.clean or not self.needs_clean:
                return 10.0, True, True
        elif action == "look":
            self.last = f"You are facing the {self.at or 'room'}. Next to it, you see nothing."
        return 0.0, False, True

    def prompt(self, history, step):
        lines = [f"You are an expert agent operating in the ALFRED Embodied Environment. Your task is to: {self.task}."]
        if history:
            lines.append(f"Prior to this step, you have already taken {step} step(s). Below are the most recent "
                         f"{len(history)} observations and the corresponding actions you took:")
            lines += [f"[Observation {k}: '{o}', Action {k}: '{a}']" for k, (o, a) in enumerate(history, 1)]
        lines.append(f"You are now at step {step + 1} and your current observation is: {self.observation()}")
        lines.append("Your admissible actions of the current situation are: [" + ", ".join(self.available_actions()) + "].")
        lines.append("Reason inside <think> </think>, then choose an admissible action inside <action> </action>.")
        return "\n".join(lines)


def policy(env, rng, invalid_rate):
    """A random policy that prefers progress; some responses are malformed (invalid actions)."""
    u = rng.random()
    if u < invalid_rate:
        return rng.choice(["I will buy it now.", "<think>hmm</think> click the item", "<action></action>",
                           "<think>let me see</think><action>fly to the moon</action>"])
    acts = env.available_actions()
    good = [a for a in acts if a.startswith(("search[", "click[b0", "click[buy", "take", "clean", "move", "open"))
            or a in ("click[blue]", "click[large]", "click[green]")]
    if isinstance(env, AlfWorldLike):
        wanted = [f"go to {env.source}"] if env.holding is None else (
            ["go to sinkbasin 1"] if env.needs_clean and not env.clean else [f"go to {env.target}"])
        good += [a for a in acts if a in wanted]
    pick = rng.choice(good) if good and rng.random() < 0.7 else rng.choice(acts)
    think = rng.choice(["", "<think>The page shows what I need.</think> ", "<think>Go on.</think> "])
    return f"{think}<action>{pick}</action>"


# ----------------------------------------------------------------------------------------------------------
# The rollout
# ----------------------------------------------------------------------------------------------------------


def rollout(env_cls, tasks, n, tokenizer, rng, max_steps=12, history_length=2, prompt_length=256,
            response_length=24, invalid_rate=0.12, keep_inactive=False):
    """verl-agent's vanilla_multi_turn_loop + gather_rollout_data for ``tasks`` (one env group each, ``n``
    environments per group). Returns a Batch; with ``keep_inactive`` the finished environments' rows stay in
    (``active_masks`` false), as the per-turn batches of the loop have them."""
    envs = [env_cls(t) for t in tasks for _ in range(n)]
    size = len(envs)
    uids = []
    for i in range(size):
        if i % n == 0:
            uid = str(uuid.UUID(int=int(rng.integers(0, 2**63)) << 64 | int(rng.integers(0, 2**63)), version=4))
        uids.append(uid)
    traj_uids = [str(uuid.UUID(int=int(rng.integers(0, 2**63)) << 64 | int(rng.integers(0, 2**63)), version=4))
                 for _ in range(size)]
    done = np.zeros(size, dtype=bool)
    episode_rewards = np.zeros(size, dtype=np.float32)
    episode_lengths = np.zeros(size, dtype=np.float32)
    histories = [[] for _ in range(size)]
    rows = [[] for _ in range(size)]
    for step in range(max_steps):
        active = ~done
        for i, env in enumerate(envs):
            text = env.prompt(histories[i][-history_length:] if history_length else [], step)
            prompt_ids = tokenizer.chat_prompt(text)[-prompt_length:]  # left truncation
            prompt = np.full(prompt_length, PAD, dtype=np.int64)
            prompt[prompt_length - len(prompt_ids):] = prompt_ids
            response_text = policy(env, rng, invalid_rate)
            response_ids = (tokenizer.encode(response_text) + [EOS])[:response_length]
            response = np.full(response_length, PAD, dtype=np.int64)
            response[:len(response_ids)] = response_ids
            attention = np.concatenate([(prompt != PAD), np.arange(response_length) < len(response_ids)]).astype(np.int64)
            observation = env.observation()
            if active[i]:
                reward, finished, valid = env.step(parse_action(response_text))
                histories[i].append((observation, parse_action(response_text) or response_text))
            else:
                reward, finished, valid = 0.0, True, True
            rows[i].append({
                "tensors": {"prompts": prompt, "responses": response,
                            "input_ids": np.concatenate([prompt, response]), "attention_mask": attention},
                "uid": uids[i], "traj_uid": traj_uids[i], "anchor_obs": observation, "index": i,
                "data_source": env.name, "rewards": np.float32(reward), "active_masks": bool(active[i]),
                "is_action_valid": bool(valid),
            })
            if active[i]:
                episode_rewards[i] += np.float32(reward)
                episode_lengths[i] += 1
                done[i] = finished
        if done.all():
            break
    kept = [(i, r) for i in range(size) for r in rows[i] if keep_inactive or r["active_masks"]]
    tensors = {k: np.stack([r["tensors"][k] for _, r in kept]) for k in kept[0][1]["tensors"]}
    non_tensor = {k: objects([r[k] for _, r in kept]) for k in
                  ("uid", "traj_uid", "anchor_obs", "index", "data_source", "rewards", "active_masks", "is_action_valid")}
    non_tensor["episode_rewards"] = objects([episode_rewards[i] for i, _ in kept])
    non_tensor["episode_lengths"] = objects([episode_lengths[i] for i, _ in kept])
    non_tensor["tool_callings"] = objects([np.float32(0.0) for _ in kept])
    return Batch(tensors, non_tensor)
