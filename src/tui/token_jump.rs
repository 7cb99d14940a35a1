//! The token jump key: from anywhere, to the next step of the run's token summaries' jump list (largest
//! mismatch, largest KL, in turn), opened in the episode view with its token strip.

use super::msg::Effects;
use super::state::{State, View};

pub fn jump(state: &mut State) -> Effects {
    let Some(summaries) = state.domain.tokens.summaries() else {
        state.ui.message = Some(match state.domain.tokens.error.as_deref() {
            Some(err) => format!("no token summaries: {err}"),
            None => "no token summaries: the run has no tokens (or they are still being summarized)".into(),
        });
        return Effects::redraw();
    };
    let list = summaries.jump_list();
    if list.is_empty() {
        state.ui.message = Some("no step records the channels of a mismatch or a KL".into());
        return Effects::redraw();
    }
    let next = state.ui.episode.token_jump.map_or(0, |j| (j + 1) % list.len());
    let (what, outlier) = list[next];
    let (id, step, value, total) = (outlier.episode.clone(), outlier.step, outlier.value, list.len());
    state.ui.episode.token_jump = Some(next);
    let found = state.domain.episodes.iter().position(|e| e.id == *id);
    match found {
        Some(e) if (step as usize) < state.domain.episodes.at(e).steps.len() => {
            state.select_row(e, step as usize);
            state.ui.view = View::Episode;
            state.ui.message = Some(format!(
                "token outlier {}/{}: largest {what} {value:.4} · episode {id} step {step}",
                next + 1,
                total
            ));
        }
        _ => {
            state.ui.message =
                Some(format!("token outlier {}/{total}: episode {id} step {step} is not in the run", next + 1))
        }
    }
    Effects::redraw()
}
