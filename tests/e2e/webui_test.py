"""The chat page in a real browser: headless Chromium (Debian's chromium and
chromium-driver) driven by Selenium against `pagoda serve`. It loads the page, sends a
message and watches the streamed reply grow and finish, stops a long reply and sees the
server's running count fall to 0, reloads and finds the conversation, shows a reply
carrying HTML as text, asks for the API key of a server that has keys and shows its 401
and 429 as readable notices; and, without a
browser, that the page comes gzip-compressed with its CSP and that --no-webui removes it.

Screenshots go to <build folder>/webui-screenshots/. Skipped (exit 77) without chromium,
chromedriver or the selenium package."""

import gzip
import json
import os
import re
import shutil

from pagoda_server import PagodaServer, check, check_equal, parse_args, serve_and_run, skip

ARGS = parse_args()
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
if not CHROMIUM or not CHROMEDRIVER:
    skip("chromium and chromedriver are needed (Debian: apt-get install chromium chromium-driver)")
try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:
    skip("the selenium package is missing: run scripts/python_env.sh")

MAX_MODEL_LEN = 1024
WAIT = 60  # seconds, for anything the model does (the machine may be busy)
LONG = 900  # tokens of the reply that the test stops (prompt and reply fit MAX_MODEL_LEN)


def build_dir():
    """The build folder: the first folder above the pagoda binary with a CMakeCache.txt."""
    folder = os.path.dirname(os.path.abspath(ARGS.pagoda))
    while folder != os.path.dirname(folder):
        if os.path.isfile(os.path.join(folder, "CMakeCache.txt")):
            return folder
        folder = os.path.dirname(folder)
    return os.getcwd()


SHOTS = os.path.join(build_dir(), "webui-screenshots")


class Browser:
    """One headless Chromium for the whole script."""

    def __init__(self):
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                    "--disable-gpu", "--window-size=1100,760", "--lang=en-US"):
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)

    def quit(self):
        self.driver.quit()

    def wait(self, condition, timeout=WAIT, message=""):
        return WebDriverWait(self.driver, timeout, poll_frequency=0.02).until(
            lambda d: condition(), message)

    def find(self, css):
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def find_all(self, css):
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def shot(self, name):
        os.makedirs(SHOTS, exist_ok=True)
        self.driver.save_screenshot(os.path.join(SHOTS, name))

    def console_errors(self):
        return [entry for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]

    def open(self, server):
        self.driver.get(f"http://127.0.0.1:{server.port}/")
        self.wait(lambda: self.js("return document.body.dataset.busy") is not None,
                  message="app.js did not start")

    def set_field(self, element_id, value):
        """Replaces a field's text by typing it (select all, then the keys)."""
        field = self.find("#" + element_id)
        field.send_keys(Keys.CONTROL, "a")
        field.send_keys(Keys.DELETE)
        if value != "":
            field.send_keys(str(value))
        self.wait(lambda: field.get_attribute("value") == str(value))

    def settings(self, max_tokens, extra=""):
        """Opens the settings panel, sets max tokens and the extra request fields, closes it."""
        self.find("#settings-toggle").click()
        self.wait(lambda: self.find("#settings").is_displayed())
        self.set_field("max-tokens", max_tokens)
        self.set_field("extra-fields", extra)
        self.find("#settings-toggle").click()
        self.wait(lambda: not self.find("#settings").is_displayed())
        saved = json.loads(self.js("return localStorage.getItem('pagoda.settings')"))
        check_equal(saved["maxTokens"], max_tokens, "saved max tokens")

    def send(self, text):
        box = self.find("#input")
        box.send_keys(text)
        box.send_keys(Keys.ENTER)

    def last_reply(self):
        replies = self.find_all("#messages .message.assistant")
        return replies[-1] if replies else None

    def reply_state(self):
        return self.js("const r = [...document.querySelectorAll('#messages .message.assistant')]"
                       ".pop(); return r ? r.dataset.state : null;")

    def wait_reply_state(self, state):
        self.wait(lambda: self.reply_state() == state, message=f"no reply in state {state}")

    def watch_reply(self):
        """Records, in the page, the text length of the last reply at each DOM change."""
        self.js("""
            window.replyLengths = [];
            const box = document.getElementById('messages');
            new MutationObserver(() => {
              const last = box.lastElementChild;
              if (last && last.classList.contains('assistant') &&
                  last.dataset.state === 'streaming') {
                window.replyLengths.push(last.querySelector('.content').textContent.length);
              }
            }).observe(box, {childList: true, subtree: true, characterData: true});""")


BROWSER = None
OPEN = PagodaServer(ARGS, "--max-model-len", MAX_MODEL_LEN, "--max-running", "4")
KEY = "sk-webui-test"
# Four requests a minute for the key: /v1/models from the page and from this script, and
# two replies pass; a third reply is refused.
KEYED = PagodaServer(ARGS, "--max-model-len", MAX_MODEL_LEN, "--api-key", KEY,
                     "--rate-limit-rpm", "4", api_key=KEY)


def running():
    return OPEN.metrics()["pagoda_num_requests_running"]


def test_page_loads_with_the_model():
    BROWSER.open(OPEN)
    BROWSER.wait(lambda: BROWSER.find("#model-name").text == OPEN.model_name(),
                 message="the model's name is not shown")
    check(str(MAX_MODEL_LEN) in BROWSER.find("#model-context").text, "context length not shown")
    check_equal(BROWSER.find("#messages .empty").text, "Send a message to start.", "empty chat")
    # Every file loaded under the strict CSP: a blocked script or style logs an error.
    check_equal(BROWSER.console_errors(), [], "browser console errors")
    BROWSER.shot("01-empty.png")


def test_streamed_reply_grows_and_finishes():
    BROWSER.settings(max_tokens=48)
    BROWSER.watch_reply()
    BROWSER.send("Write a short poem about the sea.")
    BROWSER.wait_reply_state("done")
    lengths = BROWSER.js("return window.replyLengths")
    growing = sorted(set(n for n in lengths if n > 0))
    check(len(growing) >= 3, f"the reply did not grow while streaming: {lengths}")
    reply = BROWSER.last_reply()
    check(reply.find_element(By.CSS_SELECTOR, ".content").text.strip() != "", "empty reply")
    stats = reply.find_element(By.CSS_SELECTOR, ".stats").text
    match = re.fullmatch(r"first token \d+ ms · [\d.]+ tokens/s · (\d+) tokens · (stop|length)",
                         stats)
    check(match is not None, f"stats line: {stats!r}")
    check(1 <= int(match.group(1)) <= 48, f"tokens: {stats!r}")
    check_equal(BROWSER.find("#conversation-list li.active .conversation-title").text,
                "Write a short poem about the sea.", "conversation title")
    check_equal(running(), 0.0, "running after the reply")
    BROWSER.shot("02-reply.png")


def mark_reply():
    """Marks the last reply's node. The page rebuilds every node when a reply ends, so
    wait_new_reply_done also checks that no notice says the reply failed."""
    BROWSER.js("[...document.querySelectorAll('#messages .message.assistant')].pop()"
               ".dataset.old = 'yes';")


def wait_new_reply_done():
    BROWSER.wait(lambda: no_notice() and BROWSER.js(
        "const r = [...document.querySelectorAll('#messages .message.assistant')].pop();"
        "return r && r.dataset.old === undefined && r.dataset.state === 'done';"),
        message="no new finished reply")


def test_regenerate_and_edit_replace_the_reply():
    mark_reply()
    BROWSER.find("#messages .message.assistant .regenerate").click()
    wait_new_reply_done()
    check_equal(len(BROWSER.find_all("#messages .message")), 2, "messages after regenerate")
    mark_reply()
    BROWSER.find("#messages .message.user .edit").click()
    area = BROWSER.find("#messages .message.user .edit-area")
    area.send_keys(Keys.CONTROL, "a")
    area.send_keys("Write a short poem about the moon.")
    BROWSER.find("#messages .message.user .edit-send").click()
    wait_new_reply_done()
    check_equal(BROWSER.find("#messages .message.user .content").text,
                "Write a short poem about the moon.", "the edited message")
    check_equal(len(BROWSER.find_all("#messages .message")), 2, "messages after edit")
    stored = json.loads(BROWSER.js("return localStorage.getItem('pagoda.conversations')"))
    check_equal([m["role"] for m in stored[0]["messages"]], ["user", "assistant"], "stored roles")
    check_equal(stored[0]["messages"][0]["content"], "Write a short poem about the moon.",
                "stored edit")


def no_notice():
    """True, or an AssertionError naming the page's notice (a refused request)."""
    text = BROWSER.find("#notices").text
    check(text == "", f"the page shows a notice: {text!r}")
    return True


def aborted():
    return OPEN.metrics().get('pagoda_request_finished_total{finish_reason="abort"}', 0.0)


def test_stop_aborts_the_request_in_the_server():
    aborted_before = aborted()
    BROWSER.find("#new-chat").click()
    BROWSER.settings(max_tokens=LONG, extra='{"ignore_eos": true}')
    BROWSER.send("Tell me a very long story about a lighthouse keeper.")
    BROWSER.wait(lambda: no_notice() and running() == 1.0, message="the server runs no request")
    BROWSER.wait(lambda: len(BROWSER.last_reply().find_element(By.CSS_SELECTOR, ".content").text)
                 > 20, message="no text streamed")
    check(BROWSER.find("#stop").is_displayed(), "no stop button while streaming")
    BROWSER.find("#stop").click()
    BROWSER.wait_reply_state("stopped")
    # The fetch is aborted, the connection closes, the engine drops the request.
    BROWSER.wait(lambda: running() == 0.0, timeout=5, message="still running after stop")
    BROWSER.wait(lambda: aborted() == aborted_before + 1, timeout=5,
                 message="the request is not counted as aborted")
    generated = BROWSER.last_reply().find_element(By.CSS_SELECTOR, ".stats").text
    check(generated.endswith("stopped"), f"stats of a stopped reply: {generated!r}")
    check(BROWSER.find("#send").is_displayed(), "no send button after stop")
    BROWSER.settings(max_tokens=48, extra="")
    BROWSER.shot("03-stopped.png")


def test_reload_finds_the_conversations():
    titles = [e.text for e in BROWSER.find_all("#conversation-list .conversation-title")]
    shown = BROWSER.find("#messages").text
    BROWSER.driver.refresh()
    BROWSER.wait(lambda: BROWSER.find("#model-name").text == OPEN.model_name())
    check_equal([e.text for e in BROWSER.find_all("#conversation-list .conversation-title")],
                titles, "conversations after reload")
    check_equal(BROWSER.find("#messages").text, shown, "messages after reload")
    # Renamed, and the name kept across another reload.
    BROWSER.find("#conversation-list li.active .rename").click()
    field = BROWSER.find("#conversation-list .rename-input")
    field.send_keys(Keys.CONTROL, "a")  # not clear(): WebDriver's clear blurs, which saves
    field.send_keys("Lighthouse", Keys.ENTER)
    BROWSER.driver.refresh()
    BROWSER.wait(lambda: BROWSER.find("#conversation-list li.active .conversation-title").text
                 == "Lighthouse", message="rename not kept")
    # The poem's conversation opens with its reply.
    BROWSER.find_all("#conversation-list .conversation-title")[1].click()
    BROWSER.wait(lambda: "Write a short poem" in BROWSER.find("#messages").text)
    check_equal(BROWSER.reply_state(), "done", "state of a finished reply after reload")


INJECTION = ("Here is markup: <script>window.injected = 1</script> and "
             "<img src=x onerror=\"window.injected = 2\"> and **bold** text.\n\n"
             "```html\n<img src=y onerror=\"window.injected = 3\">\n```")


def test_html_in_a_reply_is_shown_as_text():
    conversation = {"id": "injection", "title": "Injection", "created": 1, "updated": 2 ** 50,
                    "messages": [{"role": "user", "content": "<b>hi</b>"},
                                 {"role": "assistant", "content": INJECTION, "state": "done"}]}
    BROWSER.js("const list = JSON.parse(localStorage.getItem('pagoda.conversations'));"
               "list.unshift(arguments[0]);"
               "localStorage.setItem('pagoda.conversations', JSON.stringify(list));",
               conversation)
    BROWSER.driver.refresh()
    BROWSER.wait(lambda: BROWSER.find("#conversation-list li.active .conversation-title").text
                 == "Injection")
    content = BROWSER.last_reply().find_element(By.CSS_SELECTOR, ".content")
    text = content.text
    check("<script>window.injected = 1</script>" in text, f"script not shown as text: {text!r}")
    check('<img src=x onerror="window.injected = 2">' in text, f"img not shown: {text!r}")
    check('<img src=y onerror="window.injected = 3">' in text, f"code not shown: {text!r}")
    check_equal(len(BROWSER.find_all("#messages img, #messages script, #messages b")), 0,
                "elements made from the text")
    check_equal(content.find_element(By.CSS_SELECTOR, "strong").text, "bold", "Markdown bold")
    check_equal(BROWSER.js("return window.injected"), None, "injected script ran")
    check_equal(BROWSER.find("#messages .message.user .content").text, "<b>hi</b>", "user text")
    BROWSER.shot("04-html-as-text.png")


def test_export_and_delete():
    # The download is caught in the page: the blob's text is kept and the link's click
    # only notes the file name. (Reading the blob URL with fetch would break the CSP.)
    BROWSER.js("""
        window.exported = null;
        const create = URL.createObjectURL;
        URL.createObjectURL = (blob) => {
          blob.text().then((text) => { window.exported = {...window.exported, text}; });
          return create(blob);
        };
        HTMLAnchorElement.prototype.click = function () {
          window.exported = {...window.exported, name: this.download};
        };""")
    BROWSER.find("#export").click()
    BROWSER.wait(lambda: BROWSER.js("return window.exported && window.exported.text && "
                                    "window.exported.name") is not None, timeout=10,
                 message="nothing exported")
    exported = BROWSER.js("return window.exported")
    check_equal(exported["name"], "pagoda-conversations.json", "export file name")
    data = json.loads(exported["text"])
    check_equal(data["model"], OPEN.model_name(), "exported model")
    check_equal([c["title"] for c in data["conversations"]],
                [e.text for e in BROWSER.find_all("#conversation-list .conversation-title")],
                "exported conversations")
    check_equal(data["conversations"][0]["messages"][1]["content"], INJECTION, "exported text")
    # Delete "Injection" (confirmed), and it is gone after a reload.
    BROWSER.js("window.confirm = () => true;")
    BROWSER.find("#conversation-list li.active .delete").click()
    BROWSER.wait(lambda: len(BROWSER.find_all("#conversation-list li")) == 2)
    BROWSER.driver.refresh()
    BROWSER.wait(lambda: [e.text for e in BROWSER.find_all("#conversation-list .conversation-title")]
                 == ["Lighthouse", "Write a short poem about the sea."],
                 message="the deleted conversation is back")


def test_theme_and_phone_layout():
    before = BROWSER.js("return document.documentElement.dataset.theme")
    BROWSER.find("#theme-toggle").click()
    after = BROWSER.js("return document.documentElement.dataset.theme")
    check(after != before and after in ("light", "dark"), f"theme {before} -> {after}")
    BROWSER.driver.refresh()
    BROWSER.wait(lambda: BROWSER.js("return document.documentElement.dataset.theme") == after)
    if after != "dark":
        BROWSER.find("#theme-toggle").click()
    BROWSER.find_all("#conversation-list .conversation-title")[0].click()  # "Lighthouse"
    BROWSER.shot("05-dark.png")
    BROWSER.driver.set_window_size(400, 800)
    try:
        BROWSER.wait(lambda: BROWSER.find("#menu").is_displayed(), message="no menu on a phone")
        BROWSER.wait(lambda: BROWSER.js("return document.getElementById('sidebar')"
                                        ".getBoundingClientRect().right") <= 0,
                     timeout=5, message="the conversation list covers the chat on a phone")
        BROWSER.shot("06-phone.png")
        BROWSER.find("#menu").click()
        BROWSER.wait(lambda: BROWSER.js("return document.getElementById('sidebar')"
                                        ".getBoundingClientRect().left") >= 0)
        BROWSER.shot("07-phone-list.png")
    finally:
        BROWSER.driver.set_window_size(1100, 760)
        BROWSER.find("#theme-toggle").click()


def test_api_key_is_asked_for_and_errors_are_readable():
    with KEYED:
        BROWSER.open(KEYED)
        BROWSER.wait(lambda: BROWSER.find("#api-key-dialog").get_attribute("open") is not None,
                     message="no API key prompt")
        check("401 API key needed" in BROWSER.find("#notices").text, BROWSER.find("#notices").text)
        BROWSER.shot("08-api-key.png")
        BROWSER.find("#api-key-input").send_keys("sk-wrong")
        BROWSER.find("#api-key-save").click()
        BROWSER.wait(lambda: BROWSER.find("#api-key-dialog").get_attribute("open") is not None
                     and "401" in BROWSER.find("#notices").text,
                     message="a wrong key is not refused")
        BROWSER.set_field("api-key-input", KEY)
        BROWSER.find("#api-key-save").click()
        BROWSER.wait(lambda: BROWSER.find("#model-name").text == KEYED.model_name(),
                     message="the right key is not used")
        check_equal(BROWSER.find("#notices").text, "", "notices after the right key")
        BROWSER.settings(max_tokens=8)
        BROWSER.send("Hello")
        BROWSER.wait_reply_state("done")
        check_equal(BROWSER.js("return sessionStorage.getItem('pagoda.apiKey')"), KEY,
                    "key kept for the session")
        check_equal(BROWSER.js("return localStorage.getItem('pagoda.apiKey')"), None,
                    "key written to local storage")
        mark_reply()
        BROWSER.send("Hello again")
        wait_new_reply_done()
        BROWSER.send("And again")
        BROWSER.wait(lambda: "429 Too many requests: Rate limit reached" in
                     BROWSER.find("#notices").text, message="no rate limit notice")
        check(re.search(r"\(retry in \d+ s\)", BROWSER.find("#notices").text),
              BROWSER.find("#notices").text)
        check_equal(BROWSER.reply_state(), "done", "the refused reply is not left behind")
        check_equal(len(BROWSER.find_all("#messages .message")), 5, "messages after a 429")
        BROWSER.shot("09-rate-limited.png")


def test_the_page_is_served_compressed_and_no_webui_turns_it_off():
    status, headers, body = OPEN.request("GET", "/", headers={"Accept-Encoding": "gzip"})
    check_equal(status, 200, "GET /")
    check_equal(headers.get("content-encoding"), "gzip", "Content-Encoding")
    check_equal(gzip.decompress(body)[:15], b"<!doctype html>", "the page, gunzipped")
    check("default-src 'none'" in headers.get("content-security-policy", ""), str(headers))
    status, _, body = OPEN.request("GET", "/", headers={"If-None-Match": headers["etag"]})
    check_equal((status, body), (304, b""), "revalidation")
    with PagodaServer(ARGS, "--max-model-len", MAX_MODEL_LEN, "--no-webui") as server:
        check_equal(server.request("GET", "/")[0], 404, "GET / with --no-webui")
        check_equal(server.request("GET", "/app.js")[0], 404, "GET /app.js with --no-webui")
        check_equal(server.request("GET", "/v1/models")[0], 200, "the API with --no-webui")


def main():
    global BROWSER
    BROWSER = Browser()
    try:
        serve_and_run(OPEN, [test_page_loads_with_the_model, test_streamed_reply_grows_and_finishes,
                             test_regenerate_and_edit_replace_the_reply,
                             test_stop_aborts_the_request_in_the_server,
                             test_reload_finds_the_conversations,
                             test_html_in_a_reply_is_shown_as_text, test_export_and_delete,
                             test_theme_and_phone_layout,
                             test_api_key_is_asked_for_and_errors_are_readable,
                             test_the_page_is_served_compressed_and_no_webui_turns_it_off])
    finally:
        BROWSER.quit()


if __name__ == "__main__":
    main()
