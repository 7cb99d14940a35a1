//! The plugin's side of [`crate::plugin_host`]: one request in (JSON), events and a result out. The plugin crate
//! (`src/trainer/plugin`) only wraps this in its C ABI.

use std::sync::atomic::AtomicBool;

use serde::Serialize;

use crate::plugin_host::protocol::Request;

/// Answer one request, sending each event to `on_event` as JSON: a training run reports its
/// [`TrainEvent`](crate::plugin_host::TrainEvent)s and has no result (`null`); policy play returns its
/// [`AutoplayResult`](crate::plugin_host::AutoplayResult); ground truth reports
/// [`TruthProgress`](crate::plugin_host::TruthProgress) and returns its [`TruthFile`](crate::run::truth::TruthFile).
/// `Err`: the request was not understood, or policy play or ground truth failed (a failed training run says so
/// in its last event).
pub fn serve(request: &[u8], stop: &AtomicBool, on_event: &mut dyn FnMut(&[u8])) -> Result<Vec<u8>, String> {
    let request: Request = serde_json::from_slice(request)
        .map_err(|e| format!("the training plugin cannot read the request (another gigscope build?): {e}"))?;
    match request {
        Request::Train(train) => {
            super::request::run(&train, stop, &mut |event| on_event(&to_json(&event)));
            Ok(b"null".to_vec())
        }
        Request::Autoplay(play) => {
            let result = super::autoplay::autoplay(&play)?;
            serde_json::to_vec(&result).map_err(|e| format!("policy play: {e}"))
        }
        Request::Truth(truth) => {
            let file = super::truth::measure(&truth, stop, &mut |progress| on_event(&to_json(progress)))
                .map_err(|e| e.to_string())?;
            serde_json::to_vec(&file).map_err(|e| format!("ground truth: {e}"))
        }
    }
}

/// An event as JSON. The events are plain records of strings and numbers, which always encode (a non-finite
/// number becomes `null`); an empty event would be reported by the host as unreadable.
fn to_json(event: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec(event).unwrap_or_default()
}
