//! Newline-delimited JSON-RPC over stdin/stdout.
//!
//! rmcp's own stdio transport drops lines it cannot parse; the contract
//! wants the client told: a line that is not JSON gets a -32700 error with
//! `id: null`, a well-formed request of the wrong shape gets an error with
//! its id, so a client never waits forever. Everything the server writes,
//! answers and errors alike, goes through one lock, one line at a time.

use std::io;
use std::sync::Arc;

use futures::{Sink, Stream};
use rmcp::model::{
    CallToolRequest, CallToolRequestMethod, CancelTaskMethod, ClientJsonRpcMessage, ClientRequest,
    CompleteRequestMethod, ConstString, DiscoverRequestMethod, GetPromptRequestMethod,
    GetSkillRequestMethod, GetTaskMethod, InitializeRequest, InitializeResultMethod,
    JsonRpcMessage, ListPromptsRequestMethod, ListResourceTemplatesRequestMethod,
    ListResourcesRequestMethod, ListSkillsRequestMethod, ListToolsRequest, ListToolsRequestMethod,
    PingRequestMethod, ReadResourceDirectoryRequestMethod, ReadResourceRequestMethod,
    ServerJsonRpcMessage, SetLevelRequestMethod, SubscribeRequestMethod,
    SubscriptionsListenRequestMethod, UnsubscribeRequestMethod, UpdateTaskMethod,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// Longest accepted line; longer ones are answered with -32700 and skipped.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

type SharedWriter<W> = Arc<Mutex<W>>;

/// Builds the (sink, stream) pair rmcp serves on. The stream turns stdin
/// lines into messages and answers malformed ones itself; `on_eof` runs as
/// soon as the client closes its end, before the session winds down (so
/// work nobody will read can stop at once).
///
/// The stream reads stdin as rmcp's message loop polls it, with no task of
/// its own: the runtime lets a worker run only three tasks woken from the
/// one before in a row, and one more hand-over per request would make
/// rmcp's answer the fourth, queued for the idle worker to wake and write
/// from a second core.
pub fn json_lines<R, W>(
    reader: R,
    writer: W,
    on_eof: impl FnOnce() + Send + 'static,
) -> (
    impl Sink<ServerJsonRpcMessage, Error = io::Error> + Send + Unpin + 'static,
    impl Stream<Item = ClientJsonRpcMessage> + Send + Unpin + 'static,
)
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let writer: SharedWriter<W> = Arc::new(Mutex::new(writer));
    let reading = Reading {
        reader: BufReader::new(reader),
        writer: writer.clone(),
        line: Vec::new(),
        on_eof: Some(Box::new(on_eof)),
    };

    let sink = Box::pin(futures::sink::unfold(
        writer,
        |writer, message: ServerJsonRpcMessage| async move {
            let line = serde_json::to_vec(&message).map_err(io::Error::other)?;
            write_line(&writer, line).await?;
            Ok::<_, io::Error>(writer)
        },
    ));
    let stream = Box::pin(futures::stream::unfold(reading, |mut reading| async move {
        let message = reading.next_message().await?;
        Some((message, reading))
    }));
    (sink, stream)
}

/// Writes `line` and its line break with one write call: a client woken by
/// the first bytes finds the whole line there (unless it is longer than the
/// pipe holds). The log lines held for this answer follow it, written or
/// not.
async fn write_line<W: AsyncWrite + Unpin>(
    writer: &SharedWriter<W>,
    mut line: Vec<u8>,
) -> io::Result<()> {
    line.push(b'\n');
    let written = async {
        let mut writer = writer.lock().await;
        writer.write_all(&line).await?;
        writer.flush().await
    }
    .await;
    crate::logging::release_held();
    written
}

/// The client's side of stdin: lines read so far and what to do once it
/// ends.
struct Reading<R, W> {
    reader: BufReader<R>,
    writer: SharedWriter<W>,
    line: Vec<u8>,
    on_eof: Option<Box<dyn FnOnce() + Send>>,
}

impl<R, W> Reading<R, W>
where
    R: tokio::io::AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    /// The next message for rmcp; lines it must not see are answered here.
    /// `None` (closing the stream, which ends the session) at EOF, on a read
    /// error, or when an answer cannot be written; `on_eof` has run by then.
    async fn next_message(&mut self) -> Option<ClientJsonRpcMessage> {
        let message = self.read_message().await;
        if message.is_none()
            && let Some(on_eof) = self.on_eof.take()
        {
            on_eof();
        }
        message
    }

    async fn read_message(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            self.line.clear();
            let outcome = match read_line(&mut self.reader, &mut self.line).await {
                Ok(LineRead::Eof) => return None,
                Ok(LineRead::Oversized) => Decoded::Reply(error_reply(
                    Value::Null,
                    PARSE_ERROR,
                    &format!("Parse error: message longer than {MAX_LINE_BYTES} bytes"),
                )),
                Ok(LineRead::Line) => decode(&self.line),
                Err(error) => {
                    tracing::warn!(error = %error, "cannot read stdin; ending the session");
                    return None;
                }
            };
            match outcome {
                Decoded::Message(message) => return Some(*message),
                Decoded::Reply(reply) => {
                    write_line(&self.writer, reply.to_string().into_bytes())
                        .await
                        .ok()?;
                }
                Decoded::Skip => {}
            }
        }
    }
}

enum LineRead {
    Line,
    Oversized,
    Eof,
}

/// Reads one `\n`-terminated line into `line`, never holding more than
/// [`MAX_LINE_BYTES`]: the rest of an oversized line is discarded.
async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> io::Result<LineRead> {
    let mut oversized = false;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            // EOF: a last line without its newline still counts.
            return Ok(match (line.is_empty() && !oversized, oversized) {
                (true, _) => LineRead::Eof,
                (false, true) => LineRead::Oversized,
                (false, false) => LineRead::Line,
            });
        }
        // A plain scan, not `memchr`: its CPU feature detection (slow
        // `cpuid` exits on a VM) would otherwise run before the
        // `initialize` answer, and a chunk is a few KiB.
        let (used, done) = match chunk.iter().position(|&byte| byte == b'\n') {
            Some(index) => (index + 1, true),
            None => (chunk.len(), false),
        };
        if !oversized {
            if line.len() + used > MAX_LINE_BYTES {
                oversized = true;
                line.clear();
            } else {
                line.extend_from_slice(&chunk[..used]);
            }
        }
        reader.consume(used);
        if done {
            return Ok(if oversized {
                LineRead::Oversized
            } else {
                LineRead::Line
            });
        }
    }
}

enum Decoded {
    Message(Box<ClientJsonRpcMessage>),
    Reply(Value),
    Skip,
}

/// Turns one line into a message for rmcp, or into the error reply the
/// client gets instead. Every line that carries an id gets exactly one
/// answer: either rmcp's (the message passed on) or this reply, with that id
/// whenever the id itself could be read.
fn decode(raw: &[u8]) -> Decoded {
    let text = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    let text = text.strip_suffix(b"\r").unwrap_or(text);
    if text.iter().all(u8::is_ascii_whitespace) {
        return Decoded::Skip;
    }
    match serde_json::from_slice::<Value>(text) {
        Ok(value) => decode_value(value),
        Err(error) => decode_unrepresentable(text, &error),
    }
}

/// Valid JSON that serde_json cannot hold as a value (a number beyond a
/// 64-bit float such as `1e400`, nesting deeper than 128) still names its
/// id and method: read just those, skipping the rest without building it,
/// so the request is answered with its own id. Anything else is not JSON.
fn decode_unrepresentable(text: &[u8], error: &serde_json::Error) -> Decoded {
    let is_object = text
        .iter()
        .find(|byte| !byte.is_ascii_whitespace())
        .is_some_and(|&byte| byte == b'{');
    let envelope = is_object
        .then(|| serde_json::from_slice::<Envelope>(text).ok())
        .flatten();
    let problem = format!(
        "{error}; numbers must fit a 64-bit float and nesting may be at most 128 levels deep"
    );
    let Some(envelope) = envelope else {
        // Valid JSON whose id itself cannot be held (`"id": 1e400`).
        if serde_json::from_slice::<serde::de::IgnoredAny>(text).is_ok() {
            return Decoded::Reply(error_reply(
                Value::Null,
                INVALID_REQUEST,
                &format!("Invalid Request: {problem}"),
            ));
        }
        return Decoded::Reply(error_reply(
            Value::Null,
            PARSE_ERROR,
            &format!("Parse error: {error}; each line must be one JSON-RPC message"),
        ));
    };
    reply_to_unusable_message(envelope.id, envelope.method, &problem, &problem)
}

/// The answer to a message rmcp cannot take: none to a notification, ever;
/// to a request, that its params were wrong; to a message without a
/// method, that it is no valid request.
fn reply_to_unusable_message(
    id: Option<Value>,
    method: Option<String>,
    params_problem: &str,
    request_problem: &str,
) -> Decoded {
    match (id, method) {
        (None, Some(_)) => Decoded::Skip,
        (Some(id), Some(method)) => Decoded::Reply(error_reply(
            usable_id(id),
            INVALID_PARAMS,
            &format!(
                "Invalid params for {}: {params_problem}",
                shown_method(&method)
            ),
        )),
        (id, None) => Decoded::Reply(error_reply(
            id.map_or(Value::Null, usable_id),
            INVALID_REQUEST,
            &format!("Invalid Request: {request_problem}"),
        )),
    }
}

/// The two members every answer depends on; the others are skipped
/// unparsed (serde_json skips without depth limit or number conversion).
#[derive(serde::Deserialize)]
struct Envelope {
    id: Option<Value>,
    method: Option<String>,
}

fn decode_value(value: Value) -> Decoded {
    let Value::Object(object) = &value else {
        let message = if value.is_array() {
            "Invalid Request: JSON-RPC batches are not supported by MCP; send one message per line"
        } else {
            "Invalid Request: a JSON-RPC message must be a JSON object with \"jsonrpc\": \"2.0\""
        };
        return Decoded::Reply(error_reply(Value::Null, INVALID_REQUEST, message));
    };
    let id = object.get("id").cloned();
    let method = object
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_string);
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return match (id, method) {
            (None, Some(_)) => Decoded::Skip,
            (id, _) => Decoded::Reply(error_reply(
                id.map_or(Value::Null, usable_id),
                INVALID_REQUEST,
                "Invalid Request: \"jsonrpc\" must be \"2.0\"",
            )),
        };
    }
    // Deserialized from a borrow: the value is needed again only to explain
    // an error.
    match ClientJsonRpcMessage::deserialize(&value) {
        // rmcp takes any request it cannot type for a custom one and answers
        // -32601 (method not found); a method it knows came with bad params.
        Ok(JsonRpcMessage::Request(request))
            if matches!(request.request, ClientRequest::CustomRequest(_))
                && method.as_deref().is_some_and(is_known_method) =>
        {
            let method = method.unwrap_or_default();
            let detail = params_error(&method, &value)
                .unwrap_or_else(|| "params do not match its schema".into());
            Decoded::Reply(error_reply(
                usable_id(request.id.into_json_value()),
                INVALID_PARAMS,
                &format!("Invalid params for {}: {detail}", shown_method(&method)),
            ))
        }
        Ok(message) => Decoded::Message(Box::new(message)),
        Err(error) => {
            if id.is_none() && method.is_some() {
                tracing::debug!(error = %error, "ignoring a malformed notification");
            }
            reply_to_unusable_message(
                id,
                method,
                &error.to_string(),
                &format!("{error}; a request needs \"method\", a response \"result\" or \"error\""),
            )
        }
    }
}

/// The client request methods rmcp types (everything else is a custom
/// request, which it answers with "method not found").
const KNOWN_METHODS: [&str; 21] = [
    PingRequestMethod::VALUE,
    InitializeResultMethod::VALUE,
    DiscoverRequestMethod::VALUE,
    CompleteRequestMethod::VALUE,
    SetLevelRequestMethod::VALUE,
    GetPromptRequestMethod::VALUE,
    ListPromptsRequestMethod::VALUE,
    ListResourcesRequestMethod::VALUE,
    ListResourceTemplatesRequestMethod::VALUE,
    ReadResourceRequestMethod::VALUE,
    SubscriptionsListenRequestMethod::VALUE,
    SubscribeRequestMethod::VALUE,
    UnsubscribeRequestMethod::VALUE,
    CallToolRequestMethod::VALUE,
    ListToolsRequestMethod::VALUE,
    GetTaskMethod::VALUE,
    UpdateTaskMethod::VALUE,
    CancelTaskMethod::VALUE,
    ListSkillsRequestMethod::VALUE,
    GetSkillRequestMethod::VALUE,
    ReadResourceDirectoryRequestMethod::VALUE,
];

fn is_known_method(method: &str) -> bool {
    KNOWN_METHODS.contains(&method)
}

/// serde's own words on why a request of a known method does not fit its
/// typed form, for the error message; `None` for methods without typed
/// params here (the message then stays generic).
fn params_error(method: &str, message: &Value) -> Option<String> {
    fn error_of<T: serde::de::DeserializeOwned>(message: &Value) -> Option<String> {
        T::deserialize(message).err().map(|error| error.to_string())
    }
    match method {
        CallToolRequestMethod::VALUE => error_of::<CallToolRequest>(message),
        InitializeResultMethod::VALUE => error_of::<InitializeRequest>(message),
        ListToolsRequestMethod::VALUE => error_of::<ListToolsRequest>(message),
        _ => None,
    }
}

/// A client-chosen method name, cut for an error message.
fn shown_method(method: &str) -> String {
    const MAX_CHARS: usize = 100;
    match method.char_indices().nth(MAX_CHARS) {
        Some((end, _)) => format!("{}…", &method[..end]),
        None => method.to_string(),
    }
}

/// JSON-RPC ids are strings or numbers; anything else is answered as null.
fn usable_id(id: Value) -> Value {
    match id {
        Value::String(_) | Value::Number(_) => id,
        _ => Value::Null,
    }
}

fn error_reply(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(raw: &str) -> Value {
        match decode(raw.as_bytes()) {
            Decoded::Reply(value) => value,
            Decoded::Message(_) => panic!("{raw} decoded as a message"),
            Decoded::Skip => panic!("{raw} skipped"),
        }
    }

    #[test]
    fn not_json_is_a_parse_error_with_null_id() {
        let answer = reply("garbage\n");
        assert_eq!(answer["id"], Value::Null);
        assert_eq!(answer["error"]["code"], PARSE_ERROR);
        assert_eq!(reply("{\"jsonrpc\":")["error"]["code"], PARSE_ERROR);
        assert_eq!(reply("\u{feff}nope")["error"]["code"], PARSE_ERROR);
    }

    #[test]
    fn wrong_shapes_are_answered_with_their_id() {
        let answer = reply(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"x"}"#);
        assert_eq!(answer["id"], 7);
        assert_eq!(answer["error"]["code"], INVALID_PARAMS);
        assert_eq!(reply(r#"[1,2]"#)["error"]["code"], INVALID_REQUEST);
        assert_eq!(reply(r#"{"id":{"a":1}}"#)["id"], Value::Null);
    }

    #[test]
    fn good_messages_and_blank_lines() {
        let ok = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert!(matches!(decode(ok.as_bytes()), Decoded::Message(_)));
        assert!(matches!(decode(b"  \r\n"), Decoded::Skip));
        let note = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":5}"#;
        assert!(matches!(decode(note.as_bytes()), Decoded::Skip));
    }

    #[test]
    fn bare_values_are_invalid_requests_with_null_id() {
        for line in ["null", "42", "\"hi\"", "true", "{}", "[]"] {
            let answer = reply(line);
            assert_eq!(answer["id"], Value::Null, "{line}");
            assert_eq!(answer["error"]["code"], INVALID_REQUEST, "{line}");
        }
    }

    #[test]
    fn unrepresentable_numbers_and_deep_nesting_keep_the_id() {
        let big = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x","arguments":{"n":1e400}}}"#;
        assert_eq!(reply(big)["id"], 5);
        assert_eq!(reply(big)["error"]["code"], INVALID_PARAMS);
        let deep = format!(
            r#"{{"params":{{"a":{}{}}},"method":"ping","id":"deep","jsonrpc":"2.0"}}"#,
            "[".repeat(300),
            "]".repeat(300)
        );
        assert_eq!(reply(&deep)["id"], "deep");
        let no_method = r#"{"jsonrpc":"2.0","id":6,"x":-1e999}"#;
        assert_eq!(reply(no_method)["id"], 6);
        assert_eq!(reply(no_method)["error"]["code"], INVALID_REQUEST);
        // The id itself cannot be held: answered, with a null id.
        let answer = reply(r#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#);
        assert_eq!(answer["id"], Value::Null);
        assert_eq!(answer["error"]["code"], INVALID_REQUEST);
        // A notification never gets an answer.
        let note = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"p":1e400}}"#;
        assert!(matches!(decode(note.as_bytes()), Decoded::Skip));
    }

    #[test]
    fn known_methods_with_bad_params_are_invalid_params() {
        for params in [
            "null",
            "\"x\"",
            "5",
            r#"{"name":"t","arguments":"x"}"#,
            r#"{"name":"t","arguments":7}"#,
        ] {
            let line =
                format!(r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{params}}}"#);
            let answer = reply(&line);
            assert_eq!(answer["id"], 3, "{line}");
            assert_eq!(answer["error"]["code"], INVALID_PARAMS, "{line}: {answer}");
        }
        let missing = reply(r#"{"jsonrpc":"2.0","id":"m","method":"tools/call"}"#);
        assert_eq!(missing["error"]["code"], INVALID_PARAMS);
        // An unknown method stays rmcp's to answer (method not found).
        let unknown = r#"{"jsonrpc":"2.0","id":4,"method":"no/such","params":null}"#;
        assert!(matches!(decode(unknown.as_bytes()), Decoded::Message(_)));
        let wrong_version = reply(r#"{"jsonrpc":"1.0","id":8,"method":"ping"}"#);
        assert_eq!(wrong_version["id"], 8);
        assert_eq!(wrong_version["error"]["code"], INVALID_REQUEST);
    }

    mod fuzz {
        //! The decoder under generated input: it never panics, and every
        //! line that carries a readable id is either passed on as that very
        //! request or answered here with that id, exactly once.

        use super::*;
        use proptest::prelude::*;

        /// JSON text, with numbers serde_json cannot hold mixed in.
        fn json_text() -> impl Strategy<Value = String> {
            let leaf = prop_oneof![
                Just("null".to_string()),
                Just("true".to_string()),
                Just("1e400".to_string()),
                Just("-1e999".to_string()),
                Just("123456789012345678901234567890".to_string()),
                any::<i64>().prop_map(|n| n.to_string()),
                any::<f64>()
                    .prop_filter("finite", |f| f.is_finite())
                    .prop_map(|f| f.to_string()),
                ".{0,12}".prop_map(|s| Value::String(s).to_string()),
            ];
            leaf.prop_recursive(6, 48, 6, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..6)
                        .prop_map(|items| format!("[{}]", items.join(","))),
                    prop::collection::vec(("[a-z_]{1,8}", inner), 0..6).prop_map(|pairs| {
                        let members: Vec<String> = pairs
                            .into_iter()
                            .map(|(key, value)| format!("{}:{value}", Value::String(key)))
                            .collect();
                        format!("{{{}}}", members.join(","))
                    }),
                ]
            })
        }

        fn method() -> impl Strategy<Value = String> {
            prop_oneof![
                prop::sample::select(KNOWN_METHODS.to_vec()).prop_map(str::to_string),
                ".{0,12}",
            ]
        }

        fn id() -> impl Strategy<Value = Value> {
            prop_oneof![
                any::<i64>().prop_map(Value::from),
                "[a-z0-9-]{0,12}".prop_map(Value::from),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

            #[test]
            fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
                let _ = decode(&bytes);
            }

            #[test]
            fn arbitrary_json_never_panics(text in json_text()) {
                let _ = decode(text.as_bytes());
            }

            #[test]
            fn every_request_with_an_id_is_passed_on_or_answered_with_it(
                id in id(),
                method in method(),
                params in prop::option::of(json_text()),
                extra in prop::option::of(json_text()),
                id_last in any::<bool>(),
            ) {
                let mut members = vec![
                    r#""jsonrpc":"2.0""#.to_string(),
                    format!(r#""method":{}"#, Value::String(method)),
                ];
                members.extend(params.map(|p| format!(r#""params":{p}"#)));
                members.extend(extra.map(|e| format!(r#""extra":{e}"#)));
                let id_member = format!(r#""id":{id}"#);
                if id_last { members.push(id_member) } else { members.insert(0, id_member) }
                let line = format!("{{{}}}", members.join(","));
                match decode(line.as_bytes()) {
                    Decoded::Message(message) => match *message {
                        JsonRpcMessage::Request(request) => {
                            prop_assert_eq!(request.id.into_json_value(), id, "{}", line);
                        }
                        other => prop_assert!(false, "{line} became {other:?}"),
                    },
                    Decoded::Reply(answer) => prop_assert_eq!(&answer["id"], &id, "{}", line),
                    Decoded::Skip => prop_assert!(false, "{line} was not answered"),
                }
            }
        }
    }

    #[tokio::test]
    async fn oversized_lines_are_skipped_and_reading_goes_on() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 10];
        input.extend_from_slice(b"\nnext\n");
        let mut reader = BufReader::new(&input[..]);
        let mut line = Vec::new();
        assert!(matches!(
            read_line(&mut reader, &mut line).await.unwrap(),
            LineRead::Oversized
        ));
        line.clear();
        assert!(matches!(
            read_line(&mut reader, &mut line).await.unwrap(),
            LineRead::Line
        ));
        assert_eq!(line, b"next\n");
        line.clear();
        assert!(matches!(
            read_line(&mut reader, &mut line).await.unwrap(),
            LineRead::Eof
        ));
    }

    /// Records the bytes of each write it is given.
    #[derive(Clone, Default)]
    struct Writes(Arc<std::sync::Mutex<Vec<Vec<u8>>>>);

    impl AsyncWrite for Writes {
        fn poll_write(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            bytes: &[u8],
        ) -> std::task::Poll<io::Result<usize>> {
            if let Ok(mut writes) = self.0.lock() {
                writes.push(bytes.to_vec());
            }
            std::task::Poll::Ready(Ok(bytes.len()))
        }

        fn poll_flush(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }

        fn poll_shutdown(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    /// Stdin is read as the stream is polled: building and reading it needs
    /// no runtime to spawn a task on (one would panic here).
    #[test]
    fn the_stream_reads_as_it_is_polled_with_no_task_of_its_own() {
        use futures::StreamExt;
        let input = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\nnot json\n";
        let writes = Writes::default();
        let ended = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (_sink, mut stream) = json_lines(&input[..], writes.clone(), {
            let ended = ended.clone();
            move || ended.store(true, std::sync::atomic::Ordering::SeqCst)
        });
        assert!(futures::executor::block_on(stream.next()).is_some());
        assert!(writes.0.lock().unwrap().is_empty());
        assert!(!ended.load(std::sync::atomic::Ordering::SeqCst));
        assert!(futures::executor::block_on(stream.next()).is_none());
        assert_eq!(writes.0.lock().unwrap().len(), 1);
        assert!(ended.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[tokio::test]
    async fn every_line_goes_out_whole_in_one_write() {
        use futures::{SinkExt, StreamExt};
        let writes = Writes::default();
        let (ended, gone) = tokio::sync::oneshot::channel();
        let (mut sink, mut stream) = json_lines(&b"not json\n"[..], writes.clone(), move || {
            let _ = ended.send(());
        });
        // The stream answers the line that is not JSON itself, then ends.
        assert!(stream.next().await.is_none());
        gone.await.unwrap();
        let answer = ServerJsonRpcMessage::Error(rmcp::model::JsonRpcError::new(
            Some(rmcp::model::RequestId::Number(7)),
            rmcp::model::ErrorData::invalid_request("refused", None),
        ));
        sink.send(answer).await.unwrap();
        let writes = writes.0.lock().unwrap().clone();
        assert_eq!(writes.len(), 2, "{writes:?}");
        for write in &writes {
            let text = std::str::from_utf8(write).unwrap();
            assert_eq!(text.matches('\n').count(), 1, "{text}");
            assert!(text.ends_with('\n'), "{text}");
            assert!(serde_json::from_str::<Value>(text).is_ok(), "{text}");
        }
        assert!(String::from_utf8_lossy(&writes[0]).contains("-32700"));
        assert!(String::from_utf8_lossy(&writes[1]).contains("\"id\":7"));
    }
}
