//! The stop order and the stop on a failed loop, over a fake loop and a fake HTTP server that
//! record what happened, in order.

use std::sync::{Arc, Mutex};

use super::*;

/// What the fakes saw, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    /// The HTTP server got its stop and returned.
    HttpStopped,
    /// The control loop was asked to stop.
    LoopStopped,
}

type Events = Arc<Mutex<Vec<Event>>>;

struct FakeLoop {
    fails: bool,
    events: Events,
}

impl Loop for FakeLoop {
    async fn failed(&mut self) -> LoopError {
        if self.fails {
            LoopError::Ended
        } else {
            std::future::pending().await
        }
    }

    async fn stop(self) -> Result<Stopped, LoopError> {
        self.events
            .lock()
            .expect("the events")
            .push(Event::LoopStopped);
        Ok(Stopped::Cleanly)
    }
}

async fn http(events: Events, stop: CancellationToken) {
    stop.cancelled().await;
    events.lock().expect("the events").push(Event::HttpStopped);
}

#[tokio::test]
async fn a_shutdown_stops_the_http_server_before_the_control_loop() {
    let events = Events::default();
    let stop = CancellationToken::new();
    let control = FakeLoop {
        fails: false,
        events: events.clone(),
    };
    let served = sequence(control, http(events.clone(), stop.clone()), stop, async {}).await;
    assert!(matches!(served, Ok(Stopped::Cleanly)), "{served:?}");
    assert_eq!(
        *events.lock().expect("the events"),
        [Event::HttpStopped, Event::LoopStopped]
    );
}

#[tokio::test]
async fn a_control_loop_that_fails_is_stopped_after_the_http_server_and_its_failure_returned() {
    let events = Events::default();
    let stop = CancellationToken::new();
    let control = FakeLoop {
        fails: true,
        events: events.clone(),
    };
    let served = sequence(
        control,
        http(events.clone(), stop.clone()),
        stop,
        std::future::pending(),
    )
    .await;
    assert!(
        matches!(served, Err(ServeError::Loop(LoopError::Ended))),
        "{served:?}"
    );
    assert_eq!(
        *events.lock().expect("the events"),
        [Event::HttpStopped, Event::LoopStopped]
    );
}
