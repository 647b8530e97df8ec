//! Leaving a queue group loses no request, at the level of the NATS client
//! (the patched `third_party/async-nats`): a member that drains its
//! subscription answers every request the server routed to it before it
//! read the UNSUB. The stock client dropped a few of them per hundred
//! drains (they arrived after it had forgotten the subscription), which a
//! node's drain turned into 504s for other nodes' clients.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt;

use crate::cluster::Nats;

/// Answers `sub`'s requests until `stop`, then drains it and answers what
/// was still on the way: how many it answered.
async fn member(
    client: async_nats::Client,
    mut sub: async_nats::Subscriber,
    stop: tokio::sync::oneshot::Receiver<()>,
) -> u64 {
    let mut answered = 0;
    tokio::pin!(stop);
    loop {
        tokio::select! {
            Some(msg) = sub.next() => {
                client.publish(msg.reply.unwrap(), msg.payload).await.unwrap();
                answered += 1;
            }
            _ = &mut stop => break,
        }
    }
    sub.drain().await.unwrap();
    while let Some(msg) = sub.next().await {
        client
            .publish(msg.reply.unwrap(), msg.payload)
            .await
            .unwrap();
        answered += 1;
    }
    answered
}

#[tokio::test(flavor = "multi_thread")]
async fn a_member_that_drains_answers_every_request_routed_to_it() {
    const DRAINS: usize = 100;
    let nats = Nats::start().await;
    let connect = || async_nats::connect(nats.url.as_str());
    // One member stays; the other joins and drains again and again.
    let stays = connect().await.unwrap();
    let sub = stays.queue_subscribe("work", "g".into()).await.unwrap();
    let (_keep, kept) = tokio::sync::oneshot::channel();
    tokio::spawn(member(stays.clone(), sub, kept));
    let (drains, asker) = (connect().await.unwrap(), connect().await.unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let (sent, lost) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut askers = Vec::new();
    for _ in 0..8 {
        let (asker, done) = (asker.clone(), done.clone());
        let (sent, lost) = (sent.clone(), lost.clone());
        askers.push(tokio::spawn(async move {
            while !done.load(Ordering::Relaxed) {
                sent.fetch_add(1, Ordering::Relaxed);
                // A lost request is one never answered: 30 s is far past
                // a slow answer on a busy machine.
                let ask = async_nats::Request::new()
                    .payload("x".into())
                    .timeout(Some(Duration::from_secs(30)));
                if let Err(e) = asker.send_request("work", ask).await {
                    eprintln!("request not answered: {e}");
                    lost.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    let mut by_drainer = 0;
    for _ in 0..DRAINS {
        let sub = drains.queue_subscribe("work", "g".into()).await.unwrap();
        drains.flush().await.unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let serving = tokio::spawn(member(drains.clone(), sub, stopped));
        tokio::time::sleep(Duration::from_millis(20)).await;
        stop.send(()).unwrap();
        by_drainer += serving.await.unwrap();
    }
    done.store(true, Ordering::Relaxed);
    for a in askers {
        a.await.unwrap();
    }
    let (sent, lost) = (sent.load(Ordering::Relaxed), lost.load(Ordering::Relaxed));
    assert!(by_drainer > 0, "the draining member was never asked");
    assert_eq!(
        lost, 0,
        "{lost} of {sent} requests were lost in {DRAINS} drains"
    );
}
