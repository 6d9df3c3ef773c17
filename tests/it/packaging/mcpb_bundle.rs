//! The one-click Claude Desktop extension: `.github/mcpb/bundle.sh` (the
//! script the release workflow runs) validates and packs the built binary
//! with the official `mcpb` CLI; the packed bundle is a zip that unpacks to
//! the manifest and the binary; its server, started the way Claude Desktop
//! starts it (`${__dirname}` and the chosen project folder substituted),
//! answers `initialize`, lists the nine tools and serves the folder.
//!
//! The script is bash and the release job runs it on Linux, so this test
//! runs on Unix; the manifest checks run everywhere.

use crate::common::repo_dir;
use serde_json::{Value, json};
#[cfg(unix)]
use {
    crate::common::host_cli::host_cli,
    crate::common::{SETTINGS_ENV, Server, binary, copy_dir, demo_root, test_cache_home},
    rmcp::ServiceExt,
    rmcp::transport::TokioChildProcess,
    std::path::{Path, PathBuf},
    std::process::Stdio,
    tokio::process::Command,
};

fn manifest() -> Value {
    let text = std::fs::read_to_string(repo_dir().join(".github/mcpb/manifest.json"))
        .expect("read manifest");
    serde_json::from_str(&text).expect("manifest is JSON")
}

/// Replaces the variables Claude Desktop substitutes in `mcp_config`.
#[cfg(unix)]
fn substitute(text: &str, dirname: &Path, project: &Path) -> String {
    text.replace("${__dirname}", &dirname.display().to_string())
        .replace(
            "${user_config.project_folder}",
            &project.display().to_string(),
        )
}

#[test]
fn manifest_runs_the_binary_on_the_chosen_folder_and_matches_the_crate() {
    let manifest = manifest();
    let cargo: toml::Table = toml::from_str(
        &std::fs::read_to_string(repo_dir().join("Cargo.toml")).expect("Cargo.toml"),
    )
    .expect("TOML");
    assert_eq!(
        manifest["version"].as_str(),
        cargo["package"]["version"].as_str(),
        ".github/mcpb/manifest.json version follows Cargo.toml"
    );
    assert_eq!(manifest["server"]["type"], "binary");
    let config = &manifest["server"]["mcp_config"];
    assert_eq!(config["command"], "${__dirname}/server/mcp-project-helper");
    assert_eq!(
        config["args"],
        json!(["--root", "${user_config.project_folder}"])
    );
    assert_eq!(
        config["platform_overrides"]["win32"]["command"],
        "${__dirname}/server/mcp-project-helper.exe"
    );
    let folder = &manifest["user_config"]["project_folder"];
    assert_eq!(folder["type"], "directory");
    assert_eq!(folder["required"], true);
}

#[cfg(unix)]
#[tokio::test]
async fn bundle_validates_packs_unpacks_and_serves_the_chosen_folder() {
    let Some(mcpb) = host_cli("mcpb") else {
        return;
    };
    let work = tempfile::tempdir().expect("tempdir");
    let bundle = work.path().join("mcp-project-helper-linux.mcpb");

    // Validate + pack, exactly as the release job does.
    let output = std::process::Command::new(repo_dir().join(".github/mcpb/bundle.sh"))
        .arg(binary())
        .args([
            std::env::consts::OS.replace("macos", "darwin").as_str(),
            "9.8.7",
        ])
        .arg(&bundle)
        .env("MCPB", &mcpb)
        .output()
        .expect("run bundle.sh");
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "bundle.sh failed:\n{log}");
    assert!(log.contains("Manifest schema validation passes"), "{log}");
    let bytes = std::fs::read(&bundle).expect("bundle written");
    assert!(
        bytes.starts_with(b"PK\x03\x04"),
        "an .mcpb is a zip archive"
    );

    // Unzip with the official CLI, as Claude Desktop installs it.
    let unpacked = work.path().join("installed extension");
    let output = std::process::Command::new(&mcpb)
        .arg("unpack")
        .arg(&bundle)
        .arg(&unpacked)
        .output()
        .expect("mcpb unpack");
    assert!(output.status.success(), "{output:?}");
    let installed: Value = serde_json::from_str(
        &std::fs::read_to_string(unpacked.join("manifest.json")).expect("manifest in bundle"),
    )
    .expect("JSON");
    assert_eq!(installed["version"], "9.8.7", "the release's version");
    let platform = installed["compatibility"]["platforms"]
        .as_array()
        .expect("platforms");
    assert_eq!(platform.len(), 1, "one platform per bundle: {platform:?}");

    // Start the server the way Claude Desktop does: the manifest's command
    // and args with `${__dirname}` and the picked folder substituted (a
    // folder with a space, as on many desktops).
    let project = work.path().join("my project");
    copy_dir(&demo_root(), &project);
    let config = &installed["server"]["mcp_config"];
    let program = PathBuf::from(substitute(
        config["command"].as_str().expect("command"),
        &unpacked,
        &project,
    ));
    let args: Vec<String> = config["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| substitute(a.as_str().expect("string arg"), &unpacked, &project))
        .collect();
    let mut command = Command::new(&program);
    command
        .args(&args)
        .current_dir(work.path())
        .env("XDG_CACHE_HOME", test_cache_home());
    for name in SETTINGS_ENV {
        command.env_remove(name);
    }
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .expect("start the bundled server");
    let server = Server {
        client: ().serve(transport).await.expect("initialize"),
    };
    let info = server.client.peer_info().expect("server info");
    let name = info.server_info.as_ref().map(|i| i.name.as_str());
    assert_eq!(name, Some("mcp-project-helper"));

    let tools = server.client.list_all_tools().await.expect("tools/list");
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    let mut declared: Vec<&str> = installed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    declared.sort_unstable();
    assert_eq!(
        names, declared,
        "the manifest lists the tools the server offers"
    );

    let read = server
        .ok("read_project_file", json!({"path": "demo_app/models.py"}))
        .await;
    let on_disk = std::fs::read_to_string(project.join("demo_app/models.py")).expect("read");
    assert_eq!(read["content"], on_disk.as_str());
    server.stop().await;
}
