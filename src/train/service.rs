//! The plugin's side of [`crate::training`]: one request in (JSON), events and a result out. The plugin crate
//! (`src/train/plugin`) only wraps this in its C ABI.

use std::sync::atomic::AtomicBool;

use crate::training::protocol::{Request, TrainEvent};

/// Answer one request: a training run reports its events to `on_event` and has no result (`null`); policy play
/// returns its [`AutoplayResult`](crate::training::AutoplayResult). `Err`: the request was not understood or
/// policy play failed (a failed training run says so in its last event).
pub fn serve(request: &[u8], stop: &AtomicBool, on_event: &mut dyn FnMut(&TrainEvent)) -> Result<Vec<u8>, String> {
    let request: Request = serde_json::from_slice(request)
        .map_err(|e| format!("the training plugin cannot read the request (another gigscope build?): {e}"))?;
    match request {
        Request::Train(train) => {
            super::request::run(&train, stop, &mut |event| on_event(&event));
            Ok(b"null".to_vec())
        }
        Request::Autoplay(play) => {
            let result = super::autoplay::autoplay(&play)?;
            serde_json::to_vec(&result).map_err(|e| format!("policy play: {e}"))
        }
    }
}
