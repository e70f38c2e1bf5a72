//! The flagd listener over a real loopback connection, spoken to by the `h2` client: every hot
//! call answers as `unary` does on hyper (itself checked against tonic), whether its body
//! arrives with its head (answered on the connection's task) or after it (on a task of its own);
//! an event stream and what tonic answers take the second way; HTTP/1.1 Connect calls share the
//! port; and cancelling the listener lets the connection close.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use prost::Message as _;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::super::unary::tests::{self as fixtures, flagd, flagd_stopping, CLIENT_KEY, SERVER_KEY};
use super::super::unary::{self, Unary};
use crate::flagd::{v1, Flagd};
use crate::tasks::Tasks;
use flagpole_config::Config;

/// What a caller sees of an answer (the HTTP version aside: h2 says 2 for every answer).
#[derive(Debug, PartialEq)]
struct Seen {
    status: http::StatusCode,
    headers: HeaderMap,
    data: Bytes,
    trailers: Option<HeaderMap>,
}

/// The flagd listener on a loopback port; cancel the token to stop it.
async fn listening(
    flagd: Flagd,
    stopping: &CancellationToken,
) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = Arc::new(Config::default());
    let served = Tasks::new().spawn(super::super::serve(
        listener,
        flagd,
        super::super::Services::All,
        config,
        stopping.clone(),
    ));
    (addr, served)
}

/// Waits for the listener to end (after its token was cancelled and its clients have gone).
async fn stops(served: tokio::task::JoinHandle<()>) {
    tokio::time::timeout(Duration::from_secs(30), served)
        .await
        .expect("the listener stops once its connections close")
        .unwrap();
}

async fn client(addr: SocketAddr) -> h2::client::SendRequest<Bytes> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    Tasks::new().spawn(connection);
    client
}

fn head(path: &str, key: Option<&str>) -> http::Request<()> {
    let mut builder = http::Request::post(format!("http://localhost{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(key) = key {
        builder = builder.header("flagd-selector", key);
    }
    builder.body(()).unwrap()
}

/// Sends one call, its body in one piece or in two with a pause between, and reads the answer.
async fn call(
    client: &h2::client::SendRequest<Bytes>,
    request: http::Request<()>,
    body: Bytes,
    split: bool,
) -> Seen {
    let mut client = client.clone().ready().await.unwrap();
    let (answer, mut send) = client.send_request(request, false).unwrap();
    if split && body.len() > 1 {
        send.send_data(body.slice(..1), false).unwrap();
        // Long enough that the head and the first byte are read on their own, on any machine
        // likely to run this; should they not be, the same answer is still required.
        tokio::time::sleep(Duration::from_millis(30)).await;
        send.send_data(body.slice(1..), true).unwrap();
    } else {
        send.send_data(body, true).unwrap();
    }
    let (parts, mut body) = answer.await.unwrap().into_parts();
    let mut data = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
    }
    Seen {
        status: parts.status,
        headers: parts.headers,
        data: data.freeze(),
        trailers: body.trailers().await.unwrap(),
    }
}

/// The same call served by `unary` as hyper would hand it over.
async fn on_hyper(flagd: &Flagd, path: &str, key: Option<&str>, body: Bytes) -> Seen {
    let unary = Unary::of(path).expect("a hot path");
    let request = fixtures::request(path, key, &[], vec![Ok(http_body::Frame::data(body))]);
    let answered = unary::serve(flagd, unary, request, |r| fixtures::by_tonic(flagd, r)).await;
    let seen = fixtures::seen(answered).await;
    Seen {
        status: seen.status,
        headers: seen.headers,
        data: seen.data,
        trailers: seen.trailers,
    }
}

/// A gRPC body: `message` behind its 5-byte prefix.
fn framed(message: &[u8]) -> Bytes {
    fixtures::prefixed(message, 0).into()
}

#[tokio::test]
async fn every_hot_call_answers_as_on_hyper_whenever_its_body_arrives() {
    let flagd = flagd().await;
    let stopping = CancellationToken::new();
    let (addr, served) = listening(flagd.clone(), &stopping).await;
    let client = client(addr).await;
    let targeted = fixtures::context(&[
        ("targetingKey", fixtures::text("user-1")),
        ("plan", fixtures::text("enterprise")),
    ]);
    let mut codes = std::collections::BTreeSet::new();
    for version in ["v1", "v2"] {
        for (method, flag) in [
            ("ResolveBoolean", "new_checkout"),
            ("ResolveBoolean", "welcome_message"),
            ("ResolveString", "welcome_message"),
            ("ResolveString", "no_such_flag"),
            ("ResolveInt", "max_projects"),
            ("ResolveFloat", "discount_rate"),
            ("ResolveObject", "layout"),
            ("ResolveAll", ""),
        ] {
            let path = format!("/flagd.evaluation.{version}.Service/{method}");
            for context in [None, targeted.clone()] {
                let body = framed(&fixtures::request_message(method, flag, context.as_ref()));
                for key in [
                    Some(SERVER_KEY),
                    Some(CLIENT_KEY),
                    Some("no_such_key"),
                    None,
                ] {
                    let expected = on_hyper(&flagd, &path, key, body.clone()).await;
                    for split in [false, true] {
                        let seen = call(&client, head(&path, key), body.clone(), split).await;
                        assert_eq!(seen, expected, "{path} {flag} {key:?} split {split}");
                    }
                    codes.insert(fixtures::grpc_status_of(
                        &expected.headers,
                        expected.trailers.as_ref(),
                    ));
                }
            }
        }
    }
    // Answers and refusals alike: OK, a type mismatch, an unknown flag, an unknown key.
    for code in ["0", "3", "5", "16"] {
        assert!(codes.contains(code), "{code} in {codes:?}");
    }
    stopping.cancel();
    drop(client);
    stops(served).await;
}

#[tokio::test]
async fn what_the_connection_does_not_answer_itself_is_served_on_its_own_task() {
    let stopping = CancellationToken::new();
    let flagd = flagd_stopping(stopping.clone()).await;
    let (addr, served) = listening(flagd.clone(), &stopping).await;
    let client = client(addr).await;

    // A compressed message: tonic's to refuse, as it always has.
    let path = "/flagd.evaluation.v1.Service/ResolveBoolean";
    let mut message = Vec::new();
    prost::encoding::string::encode(1, &"new_checkout".to_owned(), &mut message);
    let compressed = fixtures::prefixed(&message, 1);
    let seen = call(
        &client,
        head(path, Some(SERVER_KEY)),
        compressed.clone().into(),
        false,
    )
    .await;
    let expected = on_hyper(&flagd, path, Some(SERVER_KEY), compressed.into()).await;
    assert_eq!(seen, expected);

    // An unknown method: tonic's router answers UNIMPLEMENTED.
    let seen = call(
        &client,
        head(
            "/flagd.evaluation.v1.Service/NoSuchMethod",
            Some(SERVER_KEY),
        ),
        framed(&[]),
        false,
    )
    .await;
    assert_eq!(
        fixtures::grpc_status_of(&seen.headers, seen.trailers.as_ref()),
        "12"
    );

    // An event stream: its first message arrives while the call stays open.
    let mut sender = client.clone().ready().await.unwrap();
    let (answer, mut send) = sender
        .send_request(
            head("/flagd.evaluation.v1.Service/EventStream", Some(SERVER_KEY)),
            false,
        )
        .unwrap();
    send.send_data(framed(&[]), true).unwrap();
    let (parts, mut body) = tokio::time::timeout(Duration::from_secs(30), answer)
        .await
        .expect("the stream's head")
        .unwrap()
        .into_parts();
    assert_eq!(parts.status, http::StatusCode::OK);
    let first = tokio::time::timeout(Duration::from_secs(30), body.data())
        .await
        .expect("the first event")
        .expect("a message")
        .unwrap();
    // The first message of the chunk (more may follow it in the same one).
    let len = u32::from_be_bytes([first[1], first[2], first[3], first[4]]) as usize;
    let event = v1::EventStreamResponse::decode(&first[5..5 + len]).unwrap();
    assert_eq!(event.r#type, "provider_ready");

    // Stopping: the stream ends (the providers reconnect), and so does the listener.
    stopping.cancel();
    let ended = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(chunk) = body.data().await {
            if chunk.is_err() {
                break;
            }
        }
    })
    .await;
    assert!(
        ended.is_ok(),
        "the event stream ends when the listener stops"
    );
    drop(client);
    stops(served).await;
}

#[tokio::test]
async fn http1_connect_calls_share_the_port() {
    let flagd = flagd().await;
    let stopping = CancellationToken::new();
    let (addr, _served) = listening(flagd, &stopping).await;
    let body = br#"{"flagKey":"new_checkout"}"#;
    let request = format!(
        "POST /flagd.evaluation.v1.Service/ResolveBoolean HTTP/1.1\r\nHost: x\r\n\
         Content-Type: application/json\r\nflagd-selector: {SERVER_KEY}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    tcp.write_all(body).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), tcp.read_to_end(&mut answer))
        .await
        .expect("the answer")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"value\""), "{answer}");
    stopping.cancel();
}
