//! The protocol layer: registers the six tools, hands each call to its
//! module under `tools/`, converts the result, and logs one line per call.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::JsonObject;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities,
    ContentBlock, ErrorCode, Implementation, InitializeRequestParams, InitializeResult,
    ListToolsResult, MetaObject, PaginatedRequestParams, ProgressNotificationParam,
    ProtocolVersion, ResultType, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{
    ErrorData, Json, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::config::{Config, canonical_dir};
use crate::project::{Project, ProjectSlot};
use crate::tools::check::{CheckEnd, CheckInput, CheckOutput, CheckProgress};
use crate::tools::docs::{DocsInput, DocsOutput};
use crate::tools::find::{FindInput, FindOutput};
use crate::tools::list::{ListInput, ListOutput};
use crate::tools::read::{ReadInput, ReadOutput};
use crate::tools::search::{SearchInput, SearchOutput};
use crate::tools::{self, ToolError};
use crate::transport::json_lines;

/// The order in which tools are listed: the way a model explores.
const TOOL_ORDER: [&str; 6] = [
    "search_project_files",
    "read_project_file",
    "list_project_directory",
    "find_project_files",
    "get_docs",
    "run_project_check",
];

const INSTRUCTIONS: &str = "Tools over ONE project directory. Paths are relative to the project \
root and use '/'. Typical flow: search_project_files or find_project_files to locate code, then \
read_project_file with start_line/end_line; list_project_directory to see the layout; get_docs \
for the project's Markdown docs; run_project_check to run a whitelisted check such as the tests. \
Secrets (.env, keys, .git) are never readable.";

/// Claude Code's per-result budget can be raised per tool; each value is the
/// largest result that tool can produce, as JSON text.
fn result_size_meta(max_chars: u64) -> MetaObject {
    let mut meta = MetaObject::new();
    meta.0
        .insert("anthropic/maxResultSizeChars".into(), json!(max_chars));
    meta
}

#[derive(Clone)]
pub struct ProjectHelper {
    config: Arc<Config>,
    project: Arc<ProjectSlot>,
    /// Cancelled when the client closes stdin: checks stop at once instead
    /// of running on for a reader that is gone.
    client_gone: CancellationToken,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl ProjectHelper {
    pub fn new(config: Config, project: Project, client_gone: CancellationToken) -> Self {
        Self {
            config: Arc::new(config),
            project: Arc::new(ProjectSlot::new(project)),
            client_gone,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        name = "search_project_files",
        description = "Search file contents in the project (like ripgrep). Default: exact, case-sensitive substring; set regex=true for Rust regex syntax. Narrow with `path` (a folder) and `glob` (e.g. '*.py', 'src/**/*.rs'). output_mode 'content' returns matches {file, line, text} (context_lines adds before/after), 'files_with_matches' returns file paths, 'count' returns per-file counts. Page with offset. Skips binary and >2 MiB files, ignored and secret files. Results sorted by path, then line.",
        annotations(title = "Search project files", read_only_hint = true, open_world_hint = false),
        meta = result_size_meta(400_000)
    )]
    async fn search_project_files(
        &self,
        Parameters(input): Parameters<SearchInput>,
    ) -> Result<Json<SearchOutput>, String> {
        let params = input.log_params();
        self.call(
            "search_project_files",
            params,
            SearchOutput::log_summary,
            move |p| tools::search::search(&p.gate, &input),
        )
        .await
    }

    #[tool(
        name = "read_project_file",
        description = "Read one UTF-8 text file of the project, optionally only lines start_line..end_line (1-based, inclusive). Returns content, size, total_lines and truncated (content is capped at 200 KiB: read on with a later start_line). Refuses folders, binary files, special files and secrets such as .env, .envrc, *.pem, *.key, *.p12, id_rsa*, .netrc, .npmrc and .git/.",
        annotations(title = "Read project file", read_only_hint = true, open_world_hint = false),
        meta = result_size_meta(500_000)
    )]
    async fn read_project_file(
        &self,
        Parameters(input): Parameters<ReadInput>,
    ) -> Result<Json<ReadOutput>, String> {
        let params = input.log_params();
        self.call(
            "read_project_file",
            params,
            ReadOutput::log_summary,
            move |p| tools::read::read(&p.gate, &input),
        )
        .await
    }

    #[tool(
        name = "list_project_directory",
        description = "List a project folder: entries {name, path, type: file|dir|symlink|other, size} sorted by path, down to `depth` levels (1-5). Uses the same ignore rules as search (.gitignore, node_modules, target, .venv …) and never shows secrets. Symlinks are reported, never followed.",
        annotations(title = "List project directory", read_only_hint = true, open_world_hint = false),
        meta = result_size_meta(400_000)
    )]
    async fn list_project_directory(
        &self,
        Parameters(input): Parameters<ListInput>,
    ) -> Result<Json<ListOutput>, String> {
        let params = input.log_params();
        self.call(
            "list_project_directory",
            params,
            ListOutput::log_summary,
            move |p| tools::list::list(&p.gate, &input),
        )
        .await
    }

    #[tool(
        name = "find_project_files",
        description = "Find files by glob, e.g. '**/*.rs', '*.py' (file name at any depth) or 'src/*.{ts,tsx}' (path relative to `path`). `*` and `?` never cross '/', `**` does. Same ignore rules as search; returns sorted paths relative to the project root.",
        annotations(title = "Find project files", read_only_hint = true, open_world_hint = false),
        meta = result_size_meta(300_000)
    )]
    async fn find_project_files(
        &self,
        Parameters(input): Parameters<FindInput>,
    ) -> Result<Json<FindOutput>, String> {
        let params = input.log_params();
        self.call(
            "find_project_files",
            params,
            FindOutput::log_summary,
            move |p| tools::find::find(&p.gate, &input),
        )
        .await
    }

    #[tool(
        name = "get_docs",
        description = "Search the project's Markdown documentation (the docs folder), split into sections at headings. With `query`: sections whose heading or text contain it (case-insensitive), best matches first, as {file, heading, snippet}. Without `query`: one entry per document, to see what exists.",
        annotations(title = "Search project docs", read_only_hint = true, open_world_hint = false),
        meta = result_size_meta(150_000)
    )]
    async fn get_docs(
        &self,
        Parameters(input): Parameters<DocsInput>,
    ) -> Result<Json<DocsOutput>, String> {
        let params = input.log_params();
        self.call("get_docs", params, DocsOutput::log_summary, move |p| {
            tools::docs::get_docs(p, &input)
        })
        .await
    }

    #[tool(
        name = "run_project_check",
        description = "Run one whitelisted project check (such as the test suite) by name and return exit_code, passed, duration_ms and the end of stdout/stderr. Only the names listed in this tool's input schema exist; no other command can be run. One check runs at a time; progress notifications report the latest output line. A check that exceeds its timeout is killed and returns status 'error'.",
        annotations(
            title = "Run project check",
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        ),
        meta = result_size_meta(200_000),
        output_schema = rmcp::handler::server::common::schema_for_output::<CheckOutput>()
    )]
    async fn run_project_check(
        &self,
        Parameters(input): Parameters<CheckInput>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let started = Instant::now();
        let name = input.check_name;
        let project = self.project.get().await;

        // Progress goes through one forwarding task so notifications keep
        // their order.
        let (progress_tx, mut progress_rx) =
            tokio::sync::mpsc::unbounded_channel::<CheckProgress>();
        let forwarder = context.meta.get_progress_token().map(|token| {
            let peer = context.peer.clone();
            tokio::spawn(async move {
                while let Some(update) = progress_rx.recv().await {
                    let param =
                        ProgressNotificationParam::new(token.clone(), update.elapsed_seconds)
                            .with_message(update.message);
                    let _ = peer.notify_progress(param).await;
                }
            })
        });
        let end = project
            .checks
            .run(
                &name,
                |update| {
                    if forwarder.is_some() {
                        let _ = progress_tx.send(update);
                    }
                },
                async {
                    tokio::select! {
                        () = context.ct.cancelled() => {}
                        () = self.client_gone.cancelled() => {}
                    }
                },
            )
            .await;
        drop(progress_tx);
        if let Some(forwarder) = forwarder {
            let _ = forwarder.await;
        }

        let duration_ms = started.elapsed().as_millis() as u64;
        let check_name = name.as_str();
        match end {
            Ok(CheckEnd::Completed(output)) => {
                let exit_code = output
                    .exit_code
                    .map_or_else(|| "none".to_string(), |code| code.to_string());
                tracing::info!(tool = "run_project_check", check_name, status = "success", %exit_code, passed = output.passed, duration_ms, "tool call");
                Ok(CallToolResult::structured(to_json(&output)))
            }
            Ok(CheckEnd::TimedOut(output)) => {
                tracing::info!(
                    tool = "run_project_check",
                    check_name,
                    status = "timeout",
                    duration_ms,
                    "tool call"
                );
                Ok(CallToolResult::structured_error(to_json(&output)))
            }
            Ok(CheckEnd::Cancelled) => {
                tracing::info!(
                    tool = "run_project_check",
                    check_name,
                    status = "cancelled",
                    duration_ms,
                    "tool call"
                );
                // rmcp drops the answer to a cancelled request.
                Err(ErrorData::internal_error("request cancelled", None))
            }
            Err(error) => {
                tracing::info!(tool = "run_project_check", check_name, status = "error", error = %error, duration_ms, "tool call");
                Ok(CallToolResult::error(vec![ContentBlock::text(
                    error.to_string(),
                )]))
            }
        }
    }
}

/// A tool output as JSON; the output types serialize infallibly.
fn to_json<T: serde::Serialize>(output: &T) -> Value {
    serde_json::to_value(output)
        .unwrap_or_else(|error| json!({"status": "error", "error": error.to_string()}))
}

impl ProjectHelper {
    /// Runs a tool's blocking work off the async threads, turns a panic into
    /// a tool error (the request must always be answered), and logs one line.
    async fn call<T, F>(
        &self,
        tool: &'static str,
        params: String,
        summary: fn(&T) -> String,
        work: F,
    ) -> Result<Json<T>, String>
    where
        T: Send + 'static,
        F: FnOnce(&Project) -> Result<T, ToolError> + Send + 'static,
    {
        let started = Instant::now();
        let project = self.project.get().await;
        let outcome = tokio::task::spawn_blocking(move || work(&project)).await;
        let duration_ms = started.elapsed().as_millis() as u64;
        match outcome {
            Ok(Ok(output)) => {
                let summary = summary(&output);
                tracing::info!(tool, %params, status = "success", %summary, duration_ms, "tool call");
                Ok(Json(output))
            }
            Ok(Err(error)) => {
                tracing::info!(tool, %params, status = "error", error = %error, duration_ms, "tool call");
                Err(error.to_string())
            }
            Err(join_error) => {
                tracing::error!(tool, %params, status = "error", error = %join_error, duration_ms, "tool call failed internally");
                Err(format!(
                    "internal error in {tool}; the server keeps running, please report this with the server log"
                ))
            }
        }
    }

    /// The tools in [`TOOL_ORDER`], with the check tool's input schema
    /// listing the checks offered for the current root.
    fn tools_for(&self, project: &Project) -> Vec<Tool> {
        TOOL_ORDER
            .iter()
            .filter_map(|name| self.tool_router.get(name).cloned())
            .map(|mut tool| {
                if tool.name == "run_project_check" {
                    tool.input_schema = Arc::new(check_input_schema(project));
                }
                tool
            })
            .collect()
    }

    /// True when the root should come from the client: the operator fixed
    /// none and the client offers roots.
    fn wants_client_roots(&self, capabilities: &ClientCapabilities) -> bool {
        self.config.root.is_none() && capabilities.roots.is_some()
    }

    /// Asks the client for its roots; the first usable `file://` root
    /// becomes the project root.
    fn refresh_roots(&self, peer: Peer<RoleServer>) {
        let wanted = peer
            .peer_info()
            .is_some_and(|info| self.wants_client_roots(&info.capabilities));
        if !wanted {
            self.project.set_resolving(false);
            return;
        }
        self.project.set_resolving(true);
        let helper = self.clone();
        tokio::spawn(async move {
            helper.adopt_client_root(&peer).await;
            helper.project.set_resolving(false);
        });
    }

    #[allow(deprecated)] // roots are deprecated in 2026-07-28, still used by 2025 clients
    async fn adopt_client_root(&self, peer: &Peer<RoleServer>) {
        let roots = match peer.list_roots().await {
            Ok(result) => result.roots,
            Err(error) => {
                tracing::info!(error = %error, "client did not list roots; keeping the current root");
                return;
            }
        };
        let Some(path) = roots.iter().find_map(|root| file_uri_to_path(&root.uri)) else {
            tracing::info!("client offered no file:// root; keeping the current root");
            return;
        };
        let root = match canonical_dir(&path) {
            Ok(root) => root,
            Err(error) => {
                tracing::warn!(error = %error, "client root is unusable; keeping the current root");
                return;
            }
        };
        if self.project.current().await.root() == root {
            return;
        }
        match Project::open(&self.config, root.clone()) {
            Ok(project) => {
                tracing::info!(root = %root.display(), "project root taken from the client's roots");
                self.project.replace(project).await;
                let _ = peer.notify_tool_list_changed().await;
            }
            Err(error) => tracing::warn!(error = %error, "cannot open the client's root"),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for ProjectHelper {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new(
            "mcp-project-helper",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(INSTRUCTIONS)
    }

    /// The router's answer, except that arguments of the wrong shape get a
    /// message naming the parameter; calls rejected before any tool ran
    /// (unknown tool, bad arguments) are logged here.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let started = Instant::now();
        let tool = request.name.to_string();
        let arguments = request.arguments.clone();
        let mut answer = self
            .tool_router
            .call(ToolCallContext::new(self, request, context))
            .await;
        let rejected = match &mut answer {
            // Unknown tool; a cancelled check logged its own line already.
            Err(error) if error.code == ErrorCode::INVALID_PARAMS => {
                Some(error.message.to_string())
            }
            Ok(CallToolResponse::Complete(result)) if is_argument_error(result) => {
                let message =
                    describe_bad_arguments(&tool, arguments).unwrap_or_else(|| text_of(result));
                result.content = vec![ContentBlock::text(message.clone())];
                Some(message)
            }
            Err(_) | Ok(_) => None,
        };
        if let Some(error) = rejected {
            let duration_ms = started.elapsed().as_millis() as u64;
            tracing::info!(tool = ?tool, status = "rejected", error = ?error, duration_ms, "tool call");
        }
        answer
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let project = self.project.get().await;
        let stateless = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        Ok(ListToolsResult {
            result_type: Some(ResultType::COMPLETE),
            tools: self.tools_for(&project),
            meta: None,
            next_cursor: None,
            // The check list follows the root, so clients must not cache it.
            ttl_ms: stateless.then_some(0),
            cache_scope: stateless.then_some(CacheScope::Public),
        })
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        // Tool calls may overtake the `initialized` notification, so they
        // must start waiting for the roots answer from here on.
        if self.wants_client_roots(&request.capabilities) {
            self.project.set_resolving(true);
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.refresh_roots(context.peer);
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.refresh_roots(context.peer);
    }
}

/// rmcp's marker for arguments that did not deserialize into the input type.
fn is_argument_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true) && text_of(result).starts_with("failed to deserialize parameters")
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .map(|t| t.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Deserializes the arguments again, tracking the path, so the model reads
/// which parameter was wrong: serde's own message does not say.
fn describe_bad_arguments(tool: &str, arguments: Option<JsonObject>) -> Option<String> {
    fn first_error<T: serde::de::DeserializeOwned>(value: Value) -> Option<String> {
        serde_path_to_error::deserialize::<_, T>(value)
            .err()
            .map(|error| match error.path().to_string().as_str() {
                "." => error.inner().to_string(),
                path => format!("parameter `{path}`: {}", error.inner()),
            })
    }
    let value = Value::Object(arguments.unwrap_or_default());
    let detail = match tool {
        "search_project_files" => first_error::<SearchInput>(value),
        "read_project_file" => first_error::<ReadInput>(value),
        "list_project_directory" => first_error::<ListInput>(value),
        "find_project_files" => first_error::<FindInput>(value),
        "get_docs" => first_error::<DocsInput>(value),
        "run_project_check" => first_error::<CheckInput>(value),
        _ => None,
    }?;
    Some(format!(
        "invalid arguments for {tool}: {detail}; see the tool's input schema for the allowed parameters and types"
    ))
}

/// The check tool's input schema: an enum of the offered names, each
/// described, so the model never has to guess.
fn check_input_schema(project: &Project) -> serde_json::Map<String, Value> {
    let names = project.checks.names();
    let runs = project
        .checks
        .summaries()
        .into_iter()
        .map(|(name, command)| format!("'{name}' runs `{command}`"))
        .collect::<Vec<_>>();
    let mut check_name = json!({
        "type": "string",
        "description": if names.is_empty() {
            "No checks are configured for this project; calls will be refused.".to_string()
        } else {
            format!("Name of the check to run. Available: {}.", runs.join("; "))
        },
    });
    if !names.is_empty() {
        check_name["enum"] = json!(names);
    }
    let schema = json!({
        "type": "object",
        "properties": { "check_name": check_name },
        "required": ["check_name"],
    });
    match schema {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

/// `file:///home/me/proj` → `/home/me/proj`; `file:///C:/proj` → `C:/proj`.
fn file_uri_to_path(uri: &str) -> Option<std::path::PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    let decoded = percent_decode(rest)?;
    let looks_like_drive = decoded.len() >= 3
        && decoded.as_bytes()[0] == b'/'
        && decoded.as_bytes()[1].is_ascii_alphabetic()
        && decoded.as_bytes()[2] == b':';
    let path = if looks_like_drive && cfg!(windows) {
        &decoded[1..]
    } else {
        &decoded[..]
    };
    Some(std::path::PathBuf::from(path))
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = text.get(index + 1..index + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Serves MCP on stdin/stdout until the client closes stdin.
pub fn run(config: Config) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!(error = %error, "cannot start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(serve(config));
    // A blocked stdin read must not keep the process alive after EOF
    // (rust-sdk issue 220), so leave without waiting for the runtime.
    std::process::exit(code)
}

async fn serve(config: Config) -> i32 {
    let root = match config.root_or_working_dir() {
        Ok(root) => root,
        Err(error) => {
            tracing::error!(error = %error, "cannot start");
            return 2;
        }
    };
    let project = match Project::open(&config, root) {
        Ok(project) => project,
        Err(error) => {
            tracing::error!(error = %error, "cannot open the project");
            return 2;
        }
    };
    tracing::info!(
        root = %project.root().display(),
        docs = %project.docs_location.display(),
        checks = %project.checks.names().join(","),
        version = env!("CARGO_PKG_VERSION"),
        "serving MCP on stdio"
    );
    let client_gone = CancellationToken::new();
    let helper = ProjectHelper::new(config, project, client_gone.clone());
    let (stdin, stdout) = rmcp::transport::io::stdio_pipes();
    // A check still running when the client leaves is killed at once, not
    // after rmcp's grace period for unfinished requests.
    let transport = json_lines(stdin, stdout, move || client_gone.cancel());
    let service = match helper.serve(transport).await {
        Ok(service) => service,
        Err(error) => {
            // Most often stdin closed before the handshake finished.
            tracing::info!(error = %error, "client left before the session started");
            return 0;
        }
    };
    match service.waiting().await {
        Ok(reason) => tracing::info!(reason = ?reason, "client closed the session"),
        Err(error) => tracing::warn!(error = %error, "session ended abnormally"),
    }
    // A check still running must not outlive the server.
    crate::runner::kill_running_trees();
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_become_paths() {
        assert_eq!(
            file_uri_to_path("file:///home/me/my%20proj"),
            Some(std::path::PathBuf::from("/home/me/my proj"))
        );
        assert_eq!(file_uri_to_path("https://x"), None);
        assert_eq!(file_uri_to_path("file:///bad%zz"), None);
    }

    #[test]
    fn every_tool_is_registered_in_order() {
        let router = ProjectHelper::tool_router();
        for name in TOOL_ORDER {
            let tool = router.get(name).expect(name);
            assert!(
                tool.description.as_deref().is_some_and(|d| d.len() > 40),
                "{name}"
            );
            assert!(tool.output_schema.is_some(), "{name}");
            assert!(tool.annotations.is_some(), "{name}");
        }
        assert_eq!(router.list_all().len(), TOOL_ORDER.len());
    }
}
