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
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, mpsc};

/// Longest accepted line; longer ones are answered with -32700 and skipped.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

type SharedWriter<W> = Arc<Mutex<W>>;

/// Builds the (sink, stream) pair rmcp serves on. A reader task turns
/// stdin lines into messages and answers malformed ones itself; `on_eof`
/// runs as soon as the client closes its end, before the session winds
/// down (so work nobody will read can stop at once).
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
    let (sender, receiver) = mpsc::channel::<ClientJsonRpcMessage>(64);
    let reading = read_messages(BufReader::new(reader), writer.clone(), sender);
    tokio::spawn(async move {
        reading.await;
        on_eof();
    });

    let sink = Box::pin(futures::sink::unfold(
        writer,
        |writer, message: ServerJsonRpcMessage| async move {
            let line = serde_json::to_vec(&message).map_err(io::Error::other)?;
            write_line(&writer, &line).await?;
            Ok::<_, io::Error>(writer)
        },
    ));
    let stream = Box::pin(futures::stream::unfold(
        receiver,
        |mut receiver| async move { receiver.recv().await.map(|message| (message, receiver)) },
    ));
    (sink, stream)
}

async fn write_line<W: AsyncWrite + Unpin>(
    writer: &SharedWriter<W>,
    line: &[u8],
) -> io::Result<()> {
    let mut writer = writer.lock().await;
    writer.write_all(line).await?;
    writer.write_all(b"\n").await?;
    writer.flush().await
}

/// Ends (closing the stream, which ends the session) at EOF, on a read
/// error, or when the session is gone.
async fn read_messages<R, W>(
    mut reader: BufReader<R>,
    writer: SharedWriter<W>,
    sender: mpsc::Sender<ClientJsonRpcMessage>,
) where
    R: tokio::io::AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut line = Vec::new();
    loop {
        line.clear();
        let outcome = match read_line(&mut reader, &mut line).await {
            Ok(LineRead::Eof) => return,
            Ok(LineRead::Oversized) => Decoded::Reply(error_reply(
                Value::Null,
                PARSE_ERROR,
                &format!("Parse error: message longer than {MAX_LINE_BYTES} bytes"),
            )),
            Ok(LineRead::Line) => decode(&line),
            Err(error) => {
                tracing::warn!(error = %error, "cannot read stdin; ending the session");
                return;
            }
        };
        match outcome {
            Decoded::Message(message) => {
                if sender.send(*message).await.is_err() {
                    return;
                }
            }
            Decoded::Reply(reply) => {
                if write_line(&writer, reply.to_string().as_bytes())
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Decoded::Skip => {}
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
        let (used, done) = match memchr::memchr(b'\n', chunk) {
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

fn decode(raw: &[u8]) -> Decoded {
    let text = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    let text = text.strip_suffix(b"\r").unwrap_or(text);
    if text.iter().all(u8::is_ascii_whitespace) {
        return Decoded::Skip;
    }
    let value: Value = match serde_json::from_slice(text) {
        Ok(value) => value,
        Err(error) => {
            return Decoded::Reply(error_reply(
                Value::Null,
                PARSE_ERROR,
                &format!("Parse error: {error}; each line must be one JSON-RPC message"),
            ));
        }
    };
    if value.is_array() {
        return Decoded::Reply(error_reply(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: JSON-RPC batches are not supported by MCP; send one message per line",
        ));
    }
    let id = value.get("id").cloned();
    let method = value
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_string);
    match serde_json::from_value::<ClientJsonRpcMessage>(value) {
        Ok(message) => Decoded::Message(Box::new(message)),
        Err(error) => match (id, method) {
            // A notification gets no answer, ever.
            (None, _) => {
                tracing::debug!(error = %error, "ignoring a malformed notification");
                Decoded::Skip
            }
            (Some(id), Some(method)) => Decoded::Reply(error_reply(
                usable_id(id),
                INVALID_PARAMS,
                &format!("Invalid params for {method}: {error}"),
            )),
            (Some(id), None) => Decoded::Reply(error_reply(
                usable_id(id),
                INVALID_REQUEST,
                &format!("Invalid Request: {error}"),
            )),
        },
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
}
