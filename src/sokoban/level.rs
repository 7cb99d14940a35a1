//! Sokoban levels: the grid, its text form, and generation by reverse play as in the Gym-Sokoban family.
//!
//! Generation, all from one seed (ChaCha8), so a seed always gives the same level:
//! 1. the room: walls all round, floor carved inside by a random walk of a "digger";
//! 2. the solved state: the boxes on targets on random floor cells, the player on another;
//! 3. reverse play: the player walks at random and, when it steps away from a box beside it, may pull the box
//!    along (the inverse of a push; where it can pull, it prefers to half the time). Every state reached this way is solvable by playing the walk backwards;
//!    the level is the state of the walks' prefixes (at most `max_steps` moves, so the backward walk solves it
//!    within the step limit) that moved the boxes furthest from their targets, with at least one box off its
//!    target.

use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The four moves, in the order actions are offered.
pub const MOVES: [(&str, i32, i32); 4] = [("up", -1, 0), ("down", 1, 0), ("left", 0, -1), ("right", 0, 1)];

/// Reverse walks tried per level; the best prefix of any of them is the level.
const WALKS: usize = 8;
/// Seeds tried (seed, seed + 2^32, …) before giving up on a room that allows no move of a box.
const ATTEMPTS: u64 = 64;

/// How levels are generated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelConfig {
    /// Rows and columns, walls included (at least 5).
    pub size: usize,
    pub boxes: usize,
    /// The step limit: every level is solvable in at most this many moves.
    pub max_steps: usize,
}

impl Default for LevelConfig {
    fn default() -> Self {
        LevelConfig { size: 6, boxes: 1, max_steps: 15 }
    }
}

/// A level's state: fixed walls and targets, moving boxes and player. Cells are numbered row-major.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Level {
    pub size: usize,
    pub walls: Vec<bool>,
    pub targets: Vec<bool>,
    pub boxes: Vec<bool>,
    pub player: usize,
}

impl Level {
    /// The level of `seed`.
    pub fn generate(seed: u64, config: LevelConfig) -> Option<Level> {
        (0..ATTEMPTS).find_map(|attempt| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(attempt);
            attempt_level(&mut rng, config)
        })
    }

    /// The cell one move from `cell`, if it is inside the grid.
    pub fn neighbour(&self, cell: usize, (dr, dc): (i32, i32)) -> Option<usize> {
        let (r, c) = ((cell / self.size) as i32 + dr, (cell % self.size) as i32 + dc);
        let n = self.size as i32;
        (0..n).contains(&r).then_some(())?;
        (0..n).contains(&c).then_some(())?;
        Some(r as usize * self.size + c as usize)
    }

    fn free(&self, cell: usize) -> bool {
        !self.walls[cell] && !self.boxes[cell]
    }

    /// Boxes standing on targets.
    pub fn boxes_on_targets(&self) -> usize {
        self.boxes.iter().zip(&self.targets).filter(|(b, t)| **b && **t).count()
    }

    pub fn box_count(&self) -> usize {
        self.boxes.iter().filter(|b| **b).count()
    }

    pub fn solved(&self) -> bool {
        self.boxes_on_targets() == self.box_count()
    }

    /// What a move would do, without doing it.
    pub fn effect(&self, direction: (i32, i32)) -> MoveEffect {
        let Some(next) = self.neighbour(self.player, direction) else { return MoveEffect::Blocked };
        if self.walls[next] {
            return MoveEffect::Blocked;
        }
        if !self.boxes[next] {
            return MoveEffect::Walk;
        }
        match self.neighbour(next, direction) {
            Some(beyond) if self.free(beyond) => MoveEffect::Push { from: next, to: beyond },
            _ => MoveEffect::Blocked,
        }
    }

    /// Make a move; a blocked one changes nothing.
    pub fn apply(&mut self, direction: (i32, i32)) -> MoveEffect {
        let effect = self.effect(direction);
        match effect {
            MoveEffect::Blocked => {}
            MoveEffect::Walk => self.player = self.neighbour(self.player, direction).expect("a walk stays inside"),
            MoveEffect::Push { from, to } => {
                self.boxes[from] = false;
                self.boxes[to] = true;
                self.player = from;
            }
        }
        effect
    }

    /// The grid as text, one row a line: `#` wall, `_` floor, `O` target, `X` box, `√` box on target, `P`
    /// player, `S` player on target (verl-agent's notation).
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(self.size * (self.size + 1) * 2);
        for r in 0..self.size {
            if r > 0 {
                out.push('\n');
            }
            for c in 0..self.size {
                out.push(self.glyph(r * self.size + c));
            }
        }
        out
    }

    fn glyph(&self, cell: usize) -> char {
        match (self.walls[cell], self.boxes[cell], self.targets[cell], cell == self.player) {
            (true, ..) => '#',
            (_, _, true, true) => 'S',
            (.., true) => 'P',
            (_, true, true, _) => '√',
            (_, true, false, _) => 'X',
            (_, false, true, _) => 'O',
            _ => '_',
        }
    }
}

/// What a move does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoveEffect {
    /// Into a wall, or against a box that cannot move: nothing changes.
    Blocked,
    Walk,
    /// A box moves from `from` to `to`.
    Push {
        from: usize,
        to: usize,
    },
}

fn attempt_level(rng: &mut ChaCha8Rng, config: LevelConfig) -> Option<Level> {
    let n = config.size;
    let walls = dig_room(rng, n);
    let mut floor: Vec<usize> = (0..n * n).filter(|&c| !walls[c]).collect();
    if floor.len() < config.boxes + 2 {
        return None;
    }
    // Targets (with their boxes) and the player on distinct floor cells.
    let mut cells = Vec::with_capacity(config.boxes + 1);
    for _ in 0..=config.boxes {
        cells.push(floor.swap_remove(rng.random_range(0..floor.len())));
    }
    let player = cells.pop().expect("boxes + 1 cells were drawn");
    let mut targets = vec![false; n * n];
    for &c in &cells {
        targets[c] = true;
    }
    let solved = Level { size: n, walls, boxes: targets.clone(), targets, player };
    let mut best: Option<(usize, Level)> = None;
    for _ in 0..WALKS {
        let mut level = solved.clone();
        for _ in 0..config.max_steps {
            reverse_move(rng, &mut level);
            let score = displacement(&level);
            // Ties go to the later state: a longer walk back.
            if level.boxes_on_targets() < level.box_count() && best.as_ref().is_none_or(|(b, _)| score >= *b) {
                best = Some((score, level.clone()));
            }
        }
    }
    best.map(|(_, level)| level)
}

/// A room of walls with floor dug inside by a random walk over about two thirds of the inner cells.
fn dig_room(rng: &mut ChaCha8Rng, n: usize) -> Vec<bool> {
    let inner = n.saturating_sub(2);
    let mut walls = vec![true; n * n];
    let (mut r, mut c) = (1 + rng.random_range(0..inner), 1 + rng.random_range(0..inner));
    let mut dug = 0;
    let goal = (inner * inner * 2).div_ceil(3);
    while dug < goal {
        if walls[r * n + c] {
            walls[r * n + c] = false;
            dug += 1;
        }
        let (_, dr, dc) = MOVES[rng.random_range(0..MOVES.len())];
        let (nr, nc) = (r as i32 + dr, c as i32 + dc);
        if (1..=inner as i32).contains(&nr) && (1..=inner as i32).contains(&nc) {
            (r, c) = (nr as usize, nc as usize);
        }
    }
    walls
}

/// One random move of reverse play. Where the player can pull a box (it steps away from a box beside it), it
/// does so with probability 1/2 (the inverse of a push); otherwise it walks in a random direction and pulls a
/// box that happens to be behind it with probability 3/4.
fn reverse_move(rng: &mut ChaCha8Rng, level: &mut Level) {
    let pulls: Vec<(i32, i32)> = MOVES
        .iter()
        .map(|&(_, dr, dc)| (dr, dc))
        .filter(|&(dr, dc)| {
            let free = level.neighbour(level.player, (dr, dc)).is_some_and(|n| level.free(n));
            free && level.neighbour(level.player, (-dr, -dc)).is_some_and(|b| level.boxes[b])
        })
        .collect();
    let (direction, pull) = if !pulls.is_empty() && rng.random_bool(0.5) {
        (pulls[rng.random_range(0..pulls.len())], true)
    } else {
        let (_, dr, dc) = MOVES[rng.random_range(0..MOVES.len())];
        ((dr, dc), rng.random_bool(0.75))
    };
    let Some(next) = level.neighbour(level.player, direction) else { return };
    if !level.free(next) {
        return;
    }
    let behind = level.neighbour(level.player, (-direction.0, -direction.1));
    if let Some(b) = behind.filter(|&b| level.boxes[b] && pull) {
        level.boxes[b] = false;
        level.boxes[level.player] = true;
    }
    level.player = next;
}

/// How far the boxes are from the targets: the sum over boxes of the Manhattan distance to the nearest target.
fn displacement(level: &Level) -> usize {
    let n = level.size;
    let targets: Vec<usize> = (0..n * n).filter(|&c| level.targets[c]).collect();
    (0..n * n)
        .filter(|&c| level.boxes[c])
        .map(|b| targets.iter().map(|&t| (b / n).abs_diff(t / n) + (b % n).abs_diff(t % n)).min().unwrap_or(0))
        .sum()
}
