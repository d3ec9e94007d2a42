//! The capability registry: actors found by name and type, listed in registration order.

use simtape::actor::{Actor, ActorContext, Answer};
use simtape::cap::fs::FsActor;
use simtape::cap::net::{NetActor, Network};
use simtape::Sim;

/// A capability kind the core knows nothing about (as an MCP server or a gateway would be).
#[derive(Clone)]
struct Counter {
    step: u64,
    total: u64,
}

impl Actor for Counter {
    type Request = ();
    type Response = u64;
    fn operation(&self, _: &()) -> &'static str {
        "count"
    }
    fn handle(&mut self, _: &(), _: &mut ActorContext<'_>) -> Answer<u64> {
        self.total += self.step;
        Answer {
            latency_ns: 1,
            response: self.total,
        }
    }
}

#[test]
fn capabilities_are_found_by_name_and_type_and_listed_in_order() {
    // Goal: a new kind of capability needs no field on Capabilities: it is registered by
    // name, found by name and type (a wrong type finds nothing), all of a type are listed in
    // registration order, and the pipeline's host sees the same registry as the builder.
    let mut builder = Sim::builder();
    builder.network(Network::deny());
    let ones = builder.capability("counter:ones", Counter { step: 1, total: 0 });
    builder.capability("counter:tens", Counter { step: 10, total: 0 });
    let caps = builder.capabilities();

    assert_eq!(
        caps.get::<Counter>("counter:ones").map(|a| a.id()),
        Some(ones.id())
    );
    assert!(
        caps.get::<NetActor>("counter:ones").is_none(),
        "the type must match too"
    );
    assert!(caps.get::<Counter>("counter:fives").is_none());
    assert!(caps.net().is_some() && caps.fs().is_none() && caps.llm().is_none());
    let counters: Vec<&str> = caps.all::<Counter>().map(|(name, _)| name).collect();
    assert_eq!(counters, ["counter:ones", "counter:tens"]);
    let listed: Vec<(&str, u16)> = caps.iter().map(|e| (e.name.as_str(), e.id)).collect();
    assert_eq!(
        listed,
        [("net", 3), ("counter:ones", 4), ("counter:tens", 5)]
    );
    assert!(caps.iter().nth(1).unwrap().type_name.ends_with("Counter"));

    let report = builder
        .build()
        .unwrap()
        .run(|host| async move {
            let tens = host.capabilities().get::<Counter>("counter:tens").unwrap();
            tens.call(()).await + tens.call(()).await
        })
        .unwrap();
    assert_eq!(report.output, 30);
    let tens = report.capabilities.get::<Counter>("counter:tens").unwrap();
    assert_eq!(report.actors.get(tens).map(|c| c.total), Some(20));
}

#[test]
#[should_panic(expected = "the run already has a capability named \"fs\"")]
fn a_capability_name_is_taken_once() {
    // Goal: two capabilities under one name are a configuration bug, caught at once.
    let dir = crate::tempdir("capabilities", "name_taken_once");
    let mut builder = Sim::builder();
    builder.fs(FsActor::new(&dir).unwrap());
    builder.capability("fs", Counter { step: 1, total: 0 });
}
