//! How the policy sees Sokoban ([`PolicyFeatures`]): feature keys for where the player and each box are,
//! absolutely and relative to each other and to the nearest target, and per move what it would do (walk, bump,
//! push, onto or off a target, nearer to or further from a target, back where the last move came from).

use super::env::direction;
use super::level::{Level, MoveEffect, MOVES};
use crate::env::features::{
    bucket, hashed, ActionFeatures, Decision, PolicyFeatures, StateFeatures, StateView, Taken, ACTION_DENSE,
    STATE_DENSE,
};

/// Previous moves kept in the history bag.
const HISTORY: usize = 4;

/// Sokoban's [`PolicyFeatures`]; the state is read back from the observation (the grid).
pub struct SokobanFeatures {
    instruction: Vec<i64>,
}

impl SokobanFeatures {
    pub fn new(instruction: &str) -> SokobanFeatures {
        SokobanFeatures { instruction: hashed(instruction, usize::MAX) }
    }
}

/// The level shown by a rendered grid (its text form is the whole state).
pub fn parse_grid(observation: &str) -> Option<Level> {
    let rows: Vec<Vec<char>> = observation.lines().map(|l| l.chars().collect()).collect();
    let size = rows.len();
    if size == 0 || rows.iter().any(|r| r.len() != size) {
        return None;
    }
    let mut level = Level {
        size,
        walls: vec![false; size * size],
        targets: vec![false; size * size],
        boxes: vec![false; size * size],
        player: 0,
    };
    for (cell, glyph) in rows.iter().flatten().enumerate() {
        match glyph {
            '#' => level.walls[cell] = true,
            'O' => level.targets[cell] = true,
            'X' => level.boxes[cell] = true,
            '√' => (level.boxes[cell], level.targets[cell]) = (true, true),
            'P' => level.player = cell,
            'S' => (level.player, level.targets[cell]) = (cell, true),
            _ => {}
        }
    }
    Some(level)
}

fn row_col(level: &Level, cell: usize) -> (i64, i64) {
    ((cell / level.size) as i64, (cell % level.size) as i64)
}

/// Manhattan distance from `cell` to the nearest target.
fn to_target(level: &Level, cell: usize) -> usize {
    let (r, c) = row_col(level, cell);
    (0..level.targets.len())
        .filter(|&t| level.targets[t])
        .map(|t| {
            let (tr, tc) = row_col(level, t);
            (r.abs_diff(tr) + c.abs_diff(tc)) as usize
        })
        .min()
        .unwrap_or(0)
}

/// Manhattan distance from the player to the nearest box not on a target.
fn to_loose_box(level: &Level, player: usize) -> usize {
    let (r, c) = row_col(level, player);
    (0..level.boxes.len())
        .filter(|&b| level.boxes[b] && !level.targets[b])
        .map(|b| {
            let (br, bc) = row_col(level, b);
            (r.abs_diff(br) + c.abs_diff(bc)) as usize
        })
        .min()
        .unwrap_or(0)
}

/// A box on a non-target cell with walls on two adjacent sides can never be moved again.
fn cornered(level: &Level, cell: usize) -> bool {
    if level.targets[cell] {
        return false;
    }
    let wall = |d| level.neighbour(cell, d).is_none_or(|n| level.walls[n]);
    let (up, down, left, right) = (wall((-1, 0)), wall((1, 0)), wall((0, -1)), wall((0, 1)));
    (up || down) && (left || right)
}

fn state_keys(level: &Level) -> Vec<i64> {
    let (pr, pc) = row_col(level, level.player);
    let mut keys = vec![bucket(&format!("player@{pr},{pc}"))];
    for (name, d) in MOVES.iter().map(|(name, dr, dc)| (name, (*dr, *dc))) {
        if level.neighbour(level.player, d).is_none_or(|n| level.walls[n]) {
            keys.push(bucket(&format!("wall:{name}")));
        }
    }
    for b in (0..level.boxes.len()).filter(|&b| level.boxes[b]) {
        let (br, bc) = row_col(level, b);
        let on = if level.targets[b] { "on" } else { "off" };
        keys.push(bucket(&format!("box@{br},{bc}:{on}")));
        keys.push(bucket(&format!("box-player:{},{}", br - pr, bc - pc)));
        if let Some(t) = (0..level.targets.len()).filter(|&t| level.targets[t] && !level.boxes[t]).min_by_key(|&t| {
            let (tr, tc) = row_col(level, t);
            br.abs_diff(tr) + bc.abs_diff(tc)
        }) {
            let (tr, tc) = row_col(level, t);
            keys.push(bucket(&format!("box-target:{},{}", tr - br, tc - bc)));
        }
    }
    keys
}

impl PolicyFeatures for SokobanFeatures {
    fn candidates(&self, available: &[String]) -> Vec<String> {
        available.to_vec()
    }

    fn describe(&self, state: StateView<'_>, history: &[Taken], candidates: &[String]) -> Decision {
        let Some(level) = parse_grid(state.observation) else {
            let empty = ActionFeatures { text: Vec::new(), dense: [0.0; ACTION_DENSE] };
            return Decision {
                state: StateFeatures {
                    instruction: self.instruction.clone(),
                    observation: Vec::new(),
                    history: Vec::new(),
                    dense: [0.0; STATE_DENSE],
                },
                actions: vec![empty; candidates.len()],
            };
        };
        let last = history.last().and_then(|t| direction(&t.action));
        let player_gap = to_loose_box(&level, level.player);
        let actions = candidates
            .iter()
            .map(|action| {
                let mut dense = [0f32; ACTION_DENSE];
                let Some(d) = direction(action) else {
                    return ActionFeatures { text: vec![bucket(action)], dense };
                };
                let slot = MOVES.iter().position(|(name, ..)| name == action).unwrap_or(0);
                dense[slot] = 1.0;
                let mut after = level.clone();
                match after.apply(d) {
                    MoveEffect::Blocked => dense[4] = 1.0,
                    MoveEffect::Walk => dense[5] = 1.0,
                    MoveEffect::Push { from, to } => {
                        dense[6] = 1.0;
                        dense[7] = f32::from(u8::from(!level.targets[from] && level.targets[to]));
                        dense[8] = f32::from(u8::from(level.targets[from] && !level.targets[to]));
                        let (before, now) = (to_target(&level, from), to_target(&level, to));
                        dense[9] = f32::from(u8::from(now < before));
                        dense[10] = f32::from(u8::from(now > before));
                        dense[13] = f32::from(u8::from(cornered(&after, to)));
                    }
                }
                dense[11] = f32::from(u8::from(last.is_some_and(|(lr, lc)| (lr, lc) == (-d.0, -d.1))));
                dense[12] = f32::from(u8::from(to_loose_box(&after, after.player) < player_gap));
                dense[14] = f32::from(u8::from(after.solved()));
                ActionFeatures { text: vec![bucket(&format!("move:{action}"))], dense }
            })
            .collect();
        let mut dense = [0f32; STATE_DENSE];
        dense[0] = state.step as f32 / state.step_limit.max(1) as f32;
        dense[1] = level.boxes_on_targets() as f32 / level.box_count().max(1) as f32;
        dense[2] = player_gap as f32 / level.size as f32;
        let recent: Vec<i64> =
            history.iter().rev().take(HISTORY).enumerate().map(|(i, t)| bucket(&format!("{i}:{}", t.action))).collect();
        Decision {
            state: StateFeatures {
                instruction: self.instruction.clone(),
                observation: state_keys(&level),
                history: recent,
                dense,
            },
            actions,
        }
    }

    /// The first move that pushes a box nearer a target, else the first that walks nearer a box not on a
    /// target, else the first that is not blocked.
    fn rule_choice(&self, state: StateView<'_>, candidates: &[String]) -> usize {
        let Some(level) = parse_grid(state.observation) else { return 0 };
        let gap = to_loose_box(&level, level.player);
        let effect = |action: &String| {
            let mut after = level.clone();
            direction(action).map(|d| (after.apply(d), after))
        };
        let pushes_nearer = |a: &String| matches!(effect(a), Some((MoveEffect::Push { from, to }, _)) if to_target(&level, to) < to_target(&level, from));
        let walks_nearer = |a: &String| matches!(effect(a), Some((MoveEffect::Walk, after)) if to_loose_box(&after, after.player) < gap);
        let moves = |a: &String| matches!(effect(a), Some((e, _)) if e != MoveEffect::Blocked);
        candidates
            .iter()
            .position(pushes_nearer)
            .or_else(|| candidates.iter().position(walks_nearer))
            .or_else(|| candidates.iter().position(moves))
            .unwrap_or(0)
    }
}
