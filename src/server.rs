//! The protocol layer: registers the nine tools, hands each call to its
//! module under `tools/`, converts the result, and logs one line per call.
//! The table in [`table`] says how each tool is listed.

mod table;

use std::borrow::Cow;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{ToolCallContext, ToolName};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities,
    ContentBlock, ErrorCode, Implementation, InitializeRequestParams, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion,
    ResultType, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, Peer, RequestContext};
use rmcp::{
    ErrorData, Json, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::cancel::Cancel;
use crate::checks::CheckProgress;
use crate::config::{Config, unsuitable_default_root};
use crate::logging;
use crate::project::{Project, ProjectSlot};
use crate::tools::check::{CheckInput, CheckOutput};
use crate::tools::definitions::{DefinitionsInput, DefinitionsOutput};
use crate::tools::docs::{DocsInput, DocsOutput};
use crate::tools::find::{FindInput, FindOutput};
use crate::tools::list::{ListInput, ListOutput};
use crate::tools::outline::{OutlineInput, OutlineOutput};
use crate::tools::read::{ReadInput, ReadOutput};
use crate::tools::references::{ReferencesInput, ReferencesOutput};
use crate::tools::search::{SearchInput, SearchOutput};
use crate::tools::{self, ToolError};
use crate::transport::json_lines;
use table::ToolTable;

const INSTRUCTIONS: &str = "Tools over ONE project directory. Paths are relative to the project \
root and use '/'. Typical flow: search_project_files or find_project_files to locate code, then \
read_project_file with start_line/end_line; outline_project_file for the definitions in a \
source file and their lines, find_symbol_definitions for where a name is defined, find_symbol_references for where it is used; list_project_directory to see the layout; get_docs \
for the project's Markdown docs; run_project_check to run a whitelisted check such as the tests. \
Secrets (.env, keys, .git) are never readable.";

#[derive(Clone)]
pub struct ProjectHelper {
    config: Arc<Config>,
    project: Arc<ProjectSlot>,
    /// Cancelled when the client closes stdin: checks stop at once instead
    /// of running on for a reader that is gone.
    client_gone: CancellationToken,
    /// Cancelled when the server refuses to serve: nothing named a project
    /// and the client offered no root (see `config::unsuitable_default_root`).
    refused: CancellationToken,
    tool_router: ToolRouter<Self>,
    tools: Arc<ToolTable>,
}

#[tool_router]
impl ProjectHelper {
    /// `project` is the project, or why none is named until the client's
    /// roots name one.
    pub fn new(
        config: Config,
        project: Result<Project, String>,
        client_gone: CancellationToken,
    ) -> Self {
        let tools = Arc::new(ToolTable::new(config.limits.output_chars));
        Self {
            config: Arc::new(config),
            project: Arc::new(ProjectSlot::new(project)),
            client_gone,
            refused: CancellationToken::new(),
            tool_router: Self::tool_router(),
            tools,
        }
    }

    #[tool(
        description = table::search_description(),
        annotations(title = "Search project files", read_only_hint = true, open_world_hint = false)
    )]
    async fn search_project_files(
        &self,
        ToolName(tool): ToolName,
        Parameters(input): Parameters<SearchInput>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<SearchOutput>, String> {
        let params = input.log_params();
        self.call(
            tool,
            params,
            &context,
            SearchOutput::log_summary,
            move |p, cancel| tools::search::search(&p.corpus(), &input, cancel),
        )
        .await
    }

    #[tool(
        description = table::read_description(),
        annotations(title = "Read project file", read_only_hint = true, open_world_hint = false)
    )]
    async fn read_project_file(
        &self,
        ToolName(tool): ToolName,
        Parameters(input): Parameters<ReadInput>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<ReadOutput>, String> {
        let params = input.log_params();
        self.call(
            tool,
            params,
            &context,
            ReadOutput::log_summary,
            move |p, cancel| tools::read::read(&p.gate, &input, cancel),
        )
        .await
    }

    #[tool(
        description = table::list_description(),
        annotations(title = "List project directory", read_only_hint = true, open_world_hint = false)
    )]
    async fn list_project_directory(
        &self,
        ToolName(tool): ToolName,
        Parameters(input): Parameters<ListInput>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<ListOutput>, String> {
        let params = input.log_params();
        self.call(
            tool,
            params,
            &context,
            ListOutput::log_summary,
            move |p, cancel| tools::list::list(&p.corpus(), &input, cancel),
        )
        .await
    }

    #[tool(
        description = table::find_description(),
        annotations(title = "Find project files", read_only_hint = true, open_world_hint = false)
    )]
    async fn find_project_files(
        &self,
        ToolName(tool): ToolName,
        Parameters(input): Parameters<FindInput>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<FindOutput>, String> {
        let params = input.log_params();
        self.call(
            tool,
            params,
            &context,
            FindOutput::log_summary,
            move |p, cancel| tools::find::find(&p.corpus(), &input, cancel),
        )
        .await
    }

    #[tool(
        description = table::outline_description(),
        annotations(title = "Outline project file", read_only_hint = true, open_world_hint = false)
    )]
    async fn outline_project_file(
        &self,
        ToolName(tool): ToolName,
        Parameters(input): Parameters<OutlineInput>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<OutlineOutput>, String> {
        let params = input.log_params();
        self.call(
            tool,
            params,
            &context,
            OutlineOutput::log_summary,
            move |p, cancel| tools::outline::outline(&p.gate, &input, cancel),
        )
        .await
    }

    #[tool(
        description = table::definitions_description(),
        annotations(title = "Find symbol definitions", read_only_hint = true, open_world_hint = false)
    )]
    async fn find_symbol_definitions(
        &self,
        ToolName(tool): ToolName,
        Parameters(input): Parameters<DefinitionsInput>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<DefinitionsOutput>, String> {
        let params = input.log_params();
        self.call(
            tool,
            params,
            &context,
            DefinitionsOutput::log_summary,
            move |p, cancel| tools::definitions::find_definitions(&p.corpus(), &input, cancel),
        )
        .await
    }

    #[tool(
        description = table::references_description(),
        annotations(title = "Find symbol references", read_only_hint = true, open_world_hint = false)
    )]
    async fn find_symbol_references(
        &self,
        ToolName(tool): ToolName,
        Parameters(input): Parameters<ReferencesInput>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<ReferencesOutput>, String> {
        let params = input.log_params();
        self.call(
            tool,
            params,
            &context,
            ReferencesOutput::log_summary,
            move |p, cancel| tools::references::find_references(&p.corpus(), &input, cancel),
        )
        .await
    }

    #[tool(
        description = table::docs_description(),
        annotations(title = "Search project docs", read_only_hint = true, open_world_hint = false)
    )]
    async fn get_docs(
        &self,
        ToolName(tool): ToolName,
        Parameters(input): Parameters<DocsInput>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<DocsOutput>, String> {
        let params = input.log_params();
        self.call(
            tool,
            params,
            &context,
            DocsOutput::log_summary,
            move |p, cancel| tools::docs::get_docs(p, &input, cancel),
        )
        .await
    }

    #[tool(
        description = table::check_description(),
        annotations(
            title = "Run project check",
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        ),
        output_schema = rmcp::handler::server::common::schema_for_output::<CheckOutput>()
    )]
    async fn run_project_check(
        &self,
        ToolName(tool): ToolName,
        Parameters(input): Parameters<CheckInput>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let started = Instant::now();
        let project = match self.project.get().await {
            Ok(project) => project,
            Err(reason) => {
                tracing::info!(tool = ?tool, check_name = input.check_name.as_str(), status = "error", error = %reason, "tool call");
                return Ok(CallToolResult::error(vec![ContentBlock::text(reason)]));
            }
        };
        let progress = ProgressForwarder::start(&context);
        // Detection reads project files on first use: not on the runtime's
        // own time.
        let checks = tokio::task::block_in_place(|| project.checks());
        let end = tools::check::run_check(checks, &input, |update| progress.send(update), async {
            tokio::select! {
                () = context.ct.cancelled() => {}
                () = self.client_gone.cancelled() => {}
            }
        })
        .await;
        progress.finish().await;

        let duration_ms = started.elapsed().as_millis() as u64;
        let check_name = input.check_name.as_str();
        match end {
            Ok(Some(output)) if output.status == tools::Status::Error => {
                tracing::info!(tool = ?tool, check_name, status = "timeout", duration_ms, "tool call");
                Ok(CallToolResult::structured_error(to_json(&output)))
            }
            Ok(Some(output)) => {
                let exit_code = output
                    .exit_code
                    .map_or_else(|| "none".to_string(), |code| code.to_string());
                tracing::info!(tool = ?tool, check_name, status = "success", %exit_code, passed = output.passed, duration_ms, "tool call");
                Ok(CallToolResult::structured(to_json(&output)))
            }
            Ok(None) => {
                tracing::info!(tool = ?tool, check_name, status = "cancelled", duration_ms, "tool call");
                // rmcp drops the answer to a cancelled request.
                Err(ErrorData::internal_error("request cancelled", None))
            }
            Err(error) => {
                tracing::info!(tool = ?tool, check_name, status = "error", error = %error, duration_ms, "tool call");
                Ok(CallToolResult::error(vec![ContentBlock::text(
                    error.to_string(),
                )]))
            }
        }
    }
}

/// Sends a check's progress to the client as notifications, through one
/// task so that they keep their order; a no-op when the client asked for
/// no progress.
struct ProgressForwarder {
    sender: Option<tokio::sync::mpsc::UnboundedSender<CheckProgress>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl ProgressForwarder {
    fn start(context: &RequestContext<RoleServer>) -> Self {
        let Some(token) = context.meta.get_progress_token() else {
            return Self {
                sender: None,
                task: None,
            };
        };
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<CheckProgress>();
        let peer = context.peer.clone();
        let task = tokio::spawn(async move {
            while let Some(update) = receiver.recv().await {
                let param = ProgressNotificationParam::new(token.clone(), update.elapsed_seconds)
                    .with_message(update.message);
                let _ = peer.notify_progress(param).await;
            }
        });
        Self {
            sender: Some(sender),
            task: Some(task),
        }
    }

    fn send(&self, update: CheckProgress) {
        if let Some(sender) = &self.sender {
            let _ = sender.send(update);
        }
    }

    /// Waits until every notification sent so far is out.
    async fn finish(self) {
        drop(self.sender);
        if let Some(task) = self.task {
            let _ = task.await;
        }
    }
}

/// Raises a call's cancel flag when woken by a cancellation future.
struct RaiseOnWake(Cancel);

impl std::task::Wake for RaiseOnWake {
    fn wake(self: Arc<Self>) {
        self.0.cancel();
    }
}

/// A tool output as JSON; the output types serialize infallibly.
fn to_json<T: serde::Serialize>(output: &T) -> Value {
    serde_json::to_value(output)
        .unwrap_or_else(|error| json!({"status": "error", "error": error.to_string()}))
}

impl ProjectHelper {
    /// Runs a tool's blocking work off the async threads, turns a panic into
    /// a tool error (the request must always be answered), and logs one line
    /// (an answered call's once its answer is out: `logging::after_answer`).
    /// When the client cancels the request (or leaves), the work's cancel
    /// flag is raised, and the work stops at its next check.
    async fn call<T, F>(
        &self,
        tool: Cow<'static, str>,
        params: String,
        context: &RequestContext<RoleServer>,
        summary: fn(&T) -> String,
        work: F,
    ) -> Result<Json<T>, String>
    where
        T: Send + 'static,
        F: FnOnce(&Project, &Cancel) -> Result<T, ToolError> + Send + 'static,
    {
        let started = Instant::now();
        let project = match self.project.get().await {
            Ok(project) => project,
            Err(reason) => {
                tracing::info!(tool = ?tool, %params, status = "error", error = %reason, "tool call");
                return Err(reason);
            }
        };
        let cancel = Cancel::never();
        let busy = project.model.busy();
        // The tokens' cancellation futures, polled once with a waker that
        // raises the flag: a cancel (or the client leaving) raises it from
        // the thread that fires the token, with no task to run meanwhile.
        let mut request_cancelled = std::pin::pin!(context.ct.cancelled());
        let mut client_gone = std::pin::pin!(self.client_gone.cancelled());
        {
            let waker = std::task::Waker::from(Arc::new(RaiseOnWake(cancel.clone())));
            let mut poll = std::task::Context::from_waker(&waker);
            if request_cancelled.as_mut().poll(&mut poll).is_ready()
                || client_gone.as_mut().poll(&mut poll).is_ready()
            {
                cancel.cancel();
            }
        }
        let run = || {
            let _busy = busy;
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&project, &cancel)))
        };
        // The work blocks this task's thread, an async worker, once the
        // worker's queue has moved to a new thread. A worker blocked with
        // tasks still queued would strand them (the task it runs next cannot
        // be taken by another worker), rmcp's message loop among them: a
        // cancel, or any other call, would wait for the whole call.
        let outcome = tokio::task::block_in_place(run);
        let duration_ms = started.elapsed().as_millis() as u64;
        match outcome {
            Ok(Ok(output)) => {
                let summary = summary(&output);
                logging::after_answer(|| {
                    tracing::info!(tool = ?tool, %params, status = "success", %summary, duration_ms, "tool call");
                });
                Ok(Json(output))
            }
            Ok(Err(ToolError::Cancelled)) => {
                tracing::info!(tool = ?tool, %params, status = "cancelled", duration_ms, "tool call");
                // rmcp drops the answer to a cancelled request.
                Err(ToolError::Cancelled.to_string())
            }
            Ok(Err(error)) => {
                logging::after_answer(|| {
                    tracing::info!(tool = ?tool, %params, status = "error", error = %error, duration_ms, "tool call");
                });
                Err(error.to_string())
            }
            Err(panic) => {
                let error = panic
                    .downcast_ref::<&str>()
                    .copied()
                    .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
                    .unwrap_or("a panic");
                tracing::error!(tool = ?tool, %params, status = "error", error, duration_ms, "tool call failed internally");
                Err(format!(
                    "internal error in {tool}; the server keeps running, please report this with the server log"
                ))
            }
        }
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
        let helper = self.clone();
        if !wanted {
            self.project.set_resolving(false);
            tokio::spawn(async move { helper.start_or_refuse().await });
            return;
        }
        self.project.set_resolving(true);
        tokio::spawn(async move {
            helper.adopt_client_root(&peer).await;
            helper.project.set_resolving(false);
            // The build starts once the root is settled: a model of a root
            // the client's roots replace would be built for nothing.
            helper.start_or_refuse().await;
        });
    }

    /// Starts the project's model, or, when the roots left no project
    /// named, ends the session saying why.
    async fn start_or_refuse(&self) {
        match self.project.current().await {
            Ok(project) => project.model.start(),
            Err(reason) => self.refuse(&reason),
        }
    }

    /// Logs why no project is served and ends the session.
    fn refuse(&self, reason: &str) {
        tracing::error!("{reason}");
        self.refused.cancel();
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
        let uris = roots.iter().map(|root| root.uri.as_str());
        if self.project.adopt_client_root(&self.config, uris).await {
            let _ = peer.notify_tool_list_changed().await;
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
                let message = self
                    .tools
                    .bad_arguments(&tool, arguments)
                    .unwrap_or_else(|| text_of(result));
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
        let project = self
            .project
            .get()
            .await
            .map_err(|reason| ErrorData::invalid_request(reason, None))?;
        let stateless = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        Ok(ListToolsResult {
            result_type: Some(ResultType::COMPLETE),
            // The check tool's schema may detect the checks (file reads).
            tools: tokio::task::block_in_place(|| self.tools.listed(&project)),
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
        } else if let Err(reason) = self.project.current().await {
            // No root will come from this client: refuse at once, in the
            // answer the host shows.
            self.refuse(&reason);
            return Err(ErrorData::invalid_request(reason, None));
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

/// What the server says when it will not serve the folder it was started
/// in and nothing else named a project.
fn unnamed_project_message(working_dir: &Path, what: &str) -> String {
    format!(
        "no project to serve: the server was started in {dir}, which is {what}, and nothing named a project \
(no --root, no MCP_PROJECT_HELPER_ROOT, and the client offered no root). The host chose that folder: \
Zed, for one, can start servers from / and does not answer roots/list. Name the project in the host's \
config: add \"--root\", \"/path/to/project\" to the server's args (or set MCP_PROJECT_HELPER_ROOT); \
`mcp-project-helper config <host>` prints the entry. To serve {dir} on purpose, pass --root {dir}.",
        dir = working_dir.display()
    )
}

/// Serves MCP on stdin/stdout until the client closes stdin.
pub fn run(config: Config) -> ExitCode {
    // At least two workers: one call's work may block the worker it runs
    // on (see `ProjectHelper::call`) while another reads the client.
    let workers = std::thread::available_parallelism().map_or(2, |cores| cores.get().max(2));
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
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
    logging::release_held();
    crate::index::shut_down(std::time::Duration::from_millis(500));
    logging::flush(std::time::Duration::from_millis(500));
    // A blocked stdin read must not keep the process alive after EOF
    // (rust-sdk issue 220), so leave without waiting for the runtime.
    leave(code)
}

/// Ends the process with `code` without waiting for its other threads.
/// On Windows it is terminated rather than exited: an exit stops the other
/// threads wherever they are and then runs every library's detach code,
/// and Wine's has hung so under load. Every answer was flushed and the log
/// lines written (unless stderr was not read) by then.
fn leave(code: i32) -> ! {
    #[cfg(windows)]
    {
        use windows_sys::Win32::System::Threading::{GetCurrentProcess, TerminateProcess};
        // SAFETY: the pseudo handle of the current process is always valid.
        unsafe { TerminateProcess(GetCurrentProcess(), code as u32) };
    }
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
    let unnamed = config
        .root
        .is_none()
        .then(|| unsuitable_default_root(&root))
        .flatten();
    let project = match unnamed {
        // Nothing named a project: only a root from the client can.
        Some(what) => {
            let reason = unnamed_project_message(&root, what);
            tracing::info!(
                working_dir = %root.display(),
                version = env!("CARGO_PKG_VERSION"),
                "serving MCP on stdio; the working folder is {what}, not a project: waiting for the client's roots"
            );
            Err(reason)
        }
        None => match Project::open(&config, root) {
            Ok(project) => {
                tracing::info!(
                    root = %project.root().display(),
                    docs = %project.docs_location.display(),
                    version = env!("CARGO_PKG_VERSION"),
                    "serving MCP on stdio"
                );
                Ok(project)
            }
            Err(error) => {
                tracing::error!(error = %error, "cannot open the project");
                return 2;
            }
        },
    };
    let client_gone = CancellationToken::new();
    let helper = ProjectHelper::new(config, project, client_gone.clone());
    let refused = helper.refused.clone();
    let (stdin, stdout) = rmcp::transport::io::stdio_pipes();
    // A check still running when the client leaves is killed at once, not
    // after rmcp's grace period for unfinished requests.
    let transport = json_lines(stdin, stdout, move || client_gone.cancel());
    let service = match helper.serve(transport).await {
        Ok(service) => service,
        Err(_) if refused.is_cancelled() => return 2,
        Err(error) => {
            // Most often stdin closed before the handshake finished.
            tracing::info!(error = %error, "client left before the session started");
            return 0;
        }
    };
    let session = service.cancellation_token();
    let end_when_refused = tokio::spawn({
        let refused = refused.clone();
        async move {
            refused.cancelled().await;
            session.cancel();
        }
    });
    let ended = service.waiting().await;
    end_when_refused.abort();
    if refused.is_cancelled() {
        crate::runner::kill_running_trees();
        return 2;
    }
    match ended {
        Ok(reason) => tracing::info!(reason = ?reason, "client closed the session"),
        Err(error) => tracing::warn!(error = %error, "session ended abnormally"),
    }
    // A check still running must not outlive the server.
    crate::runner::kill_running_trees();
    0
}
