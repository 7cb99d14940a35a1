//! Each episode group's size, counted episode by episode ([`GroupSizes`]), and the groups a writer cut short
//! ([`partial_groups`]): what the streaming commands and a verl step file's reader count of a run's groups
//! without keeping its episodes.

use std::hash::BuildHasher;

/// A group cut short by a writer that stopped (killed, a full disk) part-way through it: fewer episodes than its
/// trainer plays per group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartialGroup {
    pub group: String,
    pub iteration: i64,
    pub episodes: usize,
    /// The group size the trainer recorded (the smallest of those recorded above `episodes`), or where it
    /// recorded none, the size of most groups of the iteration (`recorded` false).
    pub expected: usize,
    pub recorded: bool,
}

impl std::fmt::Display for PartialGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let of = if self.recorded {
            "its trainer plays per group (run.json)"
        } else {
            "of most groups of its iteration (run.json records no group size)"
        };
        write!(
            f,
            "group {} (iteration {}) has {} of the {} episodes {of}: partial (its writer stopped part-way), not a \
             smaller complete group",
            self.group, self.iteration, self.episodes, self.expected
        )
    }
}

/// The partial groups among `episodes` (each episode's group and iteration): where the trainer recorded the
/// sizes of its groups (`group_sizes`: [`super::RunMeta::group_sizes`]), the groups of an iteration >= 1 whose size is
/// none of those recorded and below the largest; where it recorded none, the groups of an iteration >= 1
/// smaller than the iteration's usual size: the size most of its groups have, when at least two groups have it
/// and no other size as many (a trainer plays its groups of an iteration alike; an iteration of one group, or
/// of two sizes as common, says nothing). Iteration 0 (episodes played by hand, groups of any size) is left
/// out.
pub fn partial_groups<'a>(
    episodes: impl IntoIterator<Item = (&'a str, i64)>,
    group_sizes: &[usize],
) -> Vec<PartialGroup> {
    let mut sizes = GroupSizes::default();
    for (group, iteration) in episodes {
        sizes.add(group, iteration);
    }
    sizes.partial(group_sizes)
}

/// Each episode group's iteration and size, counted episode by episode, for a reader that does not keep the
/// episodes (`validate`, a verl step file's reader): what [`partial_groups`] needs. The names are kept one after another in one string
/// (a verl dump of 100 MB has 12,500 groups), not a string each, and the rest by column: 12 bytes a group
/// beside its name (where the name ends, its episodes), the iterations as runs (a run's groups come iteration
/// by iteration).
#[derive(Debug, Default)]
pub struct GroupSizes {
    names: String,
    /// Where each group's name ends in `names`, in order of first appearance.
    name_ends: Vec<usize>,
    /// Each group's episodes (a count past `u32::MAX` stays there).
    episodes: Vec<u32>,
    /// Each group's iteration (that of its first episode) as runs: (the first group of the run, the iteration).
    iterations: Vec<(usize, i64)>,
    /// Each group's place, by the hash of its name.
    places: hashbrown::HashTable<usize>,
    hasher: foldhash::fast::RandomState,
}

impl GroupSizes {
    /// One more episode of `group`, in `iteration` (that of the group's first episode is kept). Which group it
    /// is: its number in order of first appearance, and its first episode's iteration.
    pub fn add(&mut self, group: &str, iteration: i64) -> (usize, i64) {
        let hash = self.hasher.hash_one(group);
        let (names, ends) = (&self.names, &self.name_ends);
        if let Some(&place) = self.places.find(hash, |&place| name_at(names, ends, place) == group) {
            self.episodes[place] = self.episodes[place].saturating_add(1);
            return (place, self.iteration(place));
        }
        let place = self.name_ends.len();
        self.names.push_str(group);
        self.name_ends.push(self.names.len());
        self.episodes.push(1);
        if self.iterations.last().is_none_or(|&(_, last)| last != iteration) {
            self.iterations.push((place, iteration));
        }
        let (names, ends, hasher) = (&self.names, &self.name_ends, &self.hasher);
        self.places.insert_unique(hash, place, |&place| hasher.hash_one(name_at(names, ends, place)));
        (place, iteration)
    }

    /// The iteration of the group at `place`.
    fn iteration(&self, place: usize) -> i64 {
        let run = self.iterations.partition_point(|&(first, _)| first <= place);
        self.iterations[run - 1].1
    }

    /// Each group's episodes, by its number.
    pub fn episodes(&self) -> impl Iterator<Item = usize> + '_ {
        self.episodes.iter().map(|&episodes| episodes as usize)
    }

    /// How many groups were met.
    pub fn len(&self) -> usize {
        self.name_ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.name_ends.is_empty()
    }

    /// Each group's name, iteration and episodes, in order of first appearance.
    pub fn counted(&self) -> impl Iterator<Item = (&str, i64, usize)> {
        let iterations = self.iterations.iter().enumerate().flat_map(|(run, &(first, iteration))| {
            let end = self.iterations.get(run + 1).map_or(self.len(), |&(next, _)| next);
            std::iter::repeat_n(iteration, end - first)
        });
        iterations
            .zip(self.episodes())
            .enumerate()
            .map(|(place, (iteration, episodes))| (name_at(&self.names, &self.name_ends, place), iteration, episodes))
    }

    /// The partial groups under the recorded `group_sizes` (none recorded: the iterations' usual sizes;
    /// [`partial_groups`]), in order of first appearance.
    pub fn partial(&self, group_sizes: &[usize]) -> Vec<PartialGroup> {
        let counted = self.counted().filter(|&(_, iteration, _)| iteration != 0);
        match group_sizes.iter().max() {
            Some(&largest) => counted
                .filter(|&(_, _, size)| size < largest && !group_sizes.contains(&size))
                .map(|(group, iteration, episodes)| {
                    let expected = group_sizes.iter().copied().filter(|&s| s > episodes).min().unwrap_or(largest);
                    PartialGroup { group: group.to_string(), iteration, episodes, expected, recorded: true }
                })
                .collect(),
            None => {
                let usual = self.usual_sizes();
                counted
                    .filter_map(|(group, iteration, episodes)| {
                        let expected = *usual.get(&iteration)?;
                        let group =
                            PartialGroup { group: group.to_string(), iteration, episodes, expected, recorded: false };
                        (episodes < expected).then_some(group)
                    })
                    .collect()
            }
        }
    }

    /// Each iteration's usual group size, where it has one ([`partial_groups`]).
    fn usual_sizes(&self) -> std::collections::HashMap<i64, usize> {
        let mut counts: std::collections::HashMap<i64, std::collections::HashMap<usize, usize>> = Default::default();
        for (_, iteration, size) in self.counted() {
            *counts.entry(iteration).or_default().entry(size).or_default() += 1;
        }
        counts
            .into_iter()
            .filter_map(|(iteration, sizes)| {
                let most = *sizes.values().max()?;
                let mut usual = sizes.iter().filter(|&(_, &n)| n == most).map(|(&size, _)| size);
                let size = usual.next()?;
                (most >= 2 && usual.next().is_none()).then_some((iteration, size))
            })
            .collect()
    }
}

/// The name of the group at `place` of [`GroupSizes`].
fn name_at<'a>(names: &'a str, ends: &[usize], place: usize) -> &'a str {
    let start = place.checked_sub(1).map_or(0, |before| ends[before]);
    &names[start..ends[place]]
}

#[cfg(test)]
mod tests {
    use super::GroupSizes;
    use proptest::prelude::*;

    proptest! {
        /// The columns answer as a list of (name, first iteration, episodes) in order of first appearance,
        /// searched by name, would.
        #[test]
        fn group_sizes_count_as_a_list_of_groups(adds in prop::collection::vec((0u8..12, 0i64..4), 0..200)) {
            let mut sizes = GroupSizes::default();
            let mut model: Vec<(String, i64, usize)> = Vec::new();
            for (name, iteration) in adds {
                let name = format!("g{name}");
                let place = match model.iter().position(|(n, _, _)| *n == name) {
                    Some(place) => {
                        model[place].2 += 1;
                        place
                    }
                    None => {
                        model.push((name.clone(), iteration, 1));
                        model.len() - 1
                    }
                };
                prop_assert_eq!(sizes.add(&name, iteration), (place, model[place].1));
            }
            let counted: Vec<(String, i64, usize)> = sizes.counted().map(|(n, i, e)| (n.to_string(), i, e)).collect();
            prop_assert_eq!(&counted, &model);
            prop_assert_eq!(sizes.episodes().collect::<Vec<_>>(), model.iter().map(|g| g.2).collect::<Vec<_>>());
            prop_assert_eq!(sizes.len(), model.len());
        }
    }
}
