//! A headless Chromium driven over the WebDriver protocol (Debian's `chromium` and
//! `chromium-driver` packages; `chromedriver --port=0` on loopback), to load pages as a person
//! would and read the rendered DOM, not the HTML source. Plain HTTP/JSON over hyper.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};

/// The WebDriver element key (W3C).
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Where Debian installs the two programs, if they are there.
pub(crate) fn installed() -> Option<(&'static str, &'static str)> {
    let driver = "/usr/bin/chromedriver";
    let chromium = "/usr/bin/chromium";
    (Path::new(driver).exists() && Path::new(chromium).exists()).then_some((driver, chromium))
}

/// One browser session.
pub(crate) struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: Client<HttpConnector, Full<Bytes>>,
}

impl Browser {
    /// Starts chromedriver on a free loopback port and a headless Chromium session.
    pub(crate) async fn start(driver: &str, chromium: &str) -> Result<Self> {
        let mut child = Command::new(driver)
            .arg("--port=0")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {driver}"))?;
        let stdout = child.stdout.take().context("chromedriver's stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let port = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await? {
                if let Some(rest) = line.split("started successfully on port ").nth(1) {
                    return Ok::<_, anyhow::Error>(
                        rest.trim_end_matches('.').trim().parse::<u16>()?,
                    );
                }
            }
            bail!("chromedriver ended before saying its port")
        })
        .await
        .context("waiting for chromedriver")??;
        // Keep draining its stdout so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let mut browser = Self {
            driver: child,
            base: format!("http://127.0.0.1:{port}"),
            session: String::new(),
            http: Client::builder(TokioExecutor::new()).build_http(),
        };
        let created = browser
            .call(
                "POST",
                "/session",
                Some(json!({"capabilities": {"alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": {
                        "binary": chromium,
                        "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                                 "--disable-dev-shm-usage", "--window-size=1500,900",
                                 "--hide-scrollbars", "--force-device-scale-factor=1"]
                    }
                }}})),
            )
            .await?;
        browser.session = created["sessionId"]
            .as_str()
            .context("no session id")?
            .to_owned();
        Ok(browser)
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value> {
        let path = if path.starts_with("/session/") || path == "/session" {
            path.to_owned()
        } else {
            format!("/session/{}{path}", self.session)
        };
        let body = body.map_or_else(Bytes::new, |b| Bytes::from(b.to_string()));
        let request = http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(Full::new(body))?;
        let response = tokio::time::timeout(Duration::from_secs(120), self.http.request(request))
            .await
            .with_context(|| format!("WebDriver {method} {path} timed out"))??;
        let status = response.status();
        let bytes = response.into_body().collect().await?.to_bytes();
        let value: Value = serde_json::from_slice(&bytes)
            .with_context(|| format!("WebDriver {method} {path}: not JSON"))?;
        if !status.is_success() {
            bail!("WebDriver {method} {path} answered {status}: {value}");
        }
        Ok(value["value"].clone())
    }

    /// Loads `url` and waits for the document.
    pub(crate) async fn goto(&self, url: &str) -> Result<()> {
        self.call("POST", "/url", Some(json!({ "url": url })))
            .await?;
        Ok(())
    }

    /// The current URL.
    pub(crate) async fn url(&self) -> Result<String> {
        Ok(self
            .call("GET", "/url", None)
            .await?
            .as_str()
            .unwrap_or("")
            .to_owned())
    }

    async fn element(&self, css: &str) -> Result<String> {
        let found = self
            .call(
                "POST",
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await
            .with_context(|| format!("finding {css}"))?;
        Ok(found[ELEMENT]
            .as_str()
            .with_context(|| format!("no element id in {found}"))?
            .to_owned())
    }

    /// Types `text` into the element `css`.
    pub(crate) async fn type_into(&self, css: &str, text: &str) -> Result<()> {
        let id = self.element(css).await?;
        self.call(
            "POST",
            &format!("/element/{id}/value"),
            Some(json!({ "text": text })),
        )
        .await?;
        Ok(())
    }

    /// Clicks the element `css`.
    pub(crate) async fn click(&self, css: &str) -> Result<()> {
        let id = self.element(css).await?;
        self.call("POST", &format!("/element/{id}/click"), Some(json!({})))
            .await?;
        Ok(())
    }

    /// Runs `script` (a function body) in the page and returns its value.
    pub(crate) async fn eval(&self, script: &str) -> Result<Value> {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
        .await
    }

    /// Sets the window's size (a taller one shows a whole detail page in one screenshot).
    pub(crate) async fn resize(&self, width: u32, height: u32) -> Result<()> {
        self.call(
            "POST",
            "/window/rect",
            Some(json!({ "width": width, "height": height })),
        )
        .await?;
        Ok(())
    }

    /// Saves a PNG of the viewport at `path`.
    pub(crate) async fn screenshot(&self, path: &Path) -> Result<()> {
        let data = self.call("GET", "/screenshot", None).await?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().context("no screenshot data")?)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, png).with_context(|| format!("writing {}", path.display()))?;
        Ok(())
    }

    /// Ends the session and the driver.
    pub(crate) async fn stop(mut self) -> Result<()> {
        let path = format!("/session/{}", self.session);
        let _ = self.call("DELETE", &path, None).await;
        let _ = self.driver.kill().await;
        Ok(())
    }
}
