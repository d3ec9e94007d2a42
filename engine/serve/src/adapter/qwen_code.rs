//! Qwen Code: `qwen --auth-type openai -m MODEL --output-format stream-json --approval-mode
//! MODE TASK`.
//!
//! It is pointed at the endpoint as an OpenAI-compatible provider: `--auth-type openai` with
//! `OPENAI_BASE_URL` (every program gets it) and user settings simtape writes in its scratch
//! HOME (`~/.qwen/settings.json`), which select the same authentication (without them its
//! headless mode asks for an auth method), turn off its usage statistics, telemetry and update
//! checks (each dials its vendor's hosts) and name the scenario's MCP servers.
//!
//! Its stream-json is Claude Code's shape (`system` init, `assistant`, `user` tool results,
//! `result`), so Claude Code's reader reads it.

use serde_json::json;
use simtape_agent::CommandAgentSpec;

use super::{gemini_cli, Launch, Places};

/// Where Qwen Code reads its user settings, under HOME.
const SETTINGS_FILE: &str = ".qwen/settings.json";

pub(super) fn launch(spec: &CommandAgentSpec, model: &str, places: &Places<'_>) -> Launch {
    // Gemini CLI's approval modes and settings shape: Qwen Code is its fork.
    let mode = gemini_cli::approval_mode(spec, places);
    let settings = gemini_cli::settings(
        json!({"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": false}}),
        json!({"enableAutoUpdate": false, "disableAutoUpdate": true}),
        places,
    );
    Launch {
        args: [
            "--auth-type",
            "openai",
            "-m",
            model,
            "--output-format",
            "stream-json",
            "--approval-mode",
            mode,
            &spec.task,
        ]
        .map(String::from)
        .to_vec(),
        env: Vec::new(),
        files: vec![(places.home.join(SETTINGS_FILE), settings)],
    }
}
