"""The web console on the coordinator's HTTP port, in a real headless browser: Debian's
Chromium driven through chromedriver by Selenium.

The server requires SCRAM passwords for TCP connections (pg_hba.conf below), so the
console's login is checked by the same rules: the browser is sent to the login page
until it logs in, a wrong password or an unknown role is refused with the server's own
message, and the data endpoints answer 401 without the login's cookie. Logged in, while
pgbench runs, the throughput chart draws a line from live samples whose peak is above
zero, the latency chart draws too, the sessions table lists pgbench's sessions, the top
statements are pgbench's, the nodes are up, and a session blocked on a row lock shows in
the waits table. Logging out ends it.

PostgreSQL has no web console: under the ``postgres`` target these tests are skipped.
"""

import os
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import psycopg
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from conftest import Access, pg_tool

PASSWORD = "console-secret"
HBA = "local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n"


@pytest.fixture
def server(server_kind, meridian_factory):
    if server_kind == "postgres":
        pytest.skip("PostgreSQL has no web console")
    return meridian_factory(http_metrics=True,
                            access=Access(hba=HBA, superuser_password=PASSWORD))


@pytest.fixture
def browser():
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver, "Debian's chromium and chromium-driver (scripts/test.sh installs them)"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    b = webdriver.Chrome(service=Service(driver), options=options)
    b.set_page_load_timeout(30)
    try:
        yield b
    finally:
        b.quit()


def console_url(server, path=""):
    base = urllib.parse.urlsplit(server.metrics_url)
    return f"{base.scheme}://{base.netloc}{path}"


def wait_for(what, condition, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.25)


def submit(browser, button_id):
    """Clicks `button_id` and waits for the page it leads to (the old one goes stale)."""
    button = browser.find_element(By.ID, button_id)
    button.click()
    WebDriverWait(browser, 30).until(expected_conditions.staleness_of(button))


def log_in(browser, server, user, password):
    browser.get(console_url(server, "/login"))
    browser.find_element(By.ID, "user").send_keys(user)
    browser.find_element(By.ID, "password").send_keys(password)
    submit(browser, "submit")


def login_error(browser):
    errors = browser.find_elements(By.ID, "error")
    return errors[0].text if errors else None


def text(browser, element_id):
    return browser.find_element(By.ID, element_id).text


def test_a_login_is_required(server, browser):
    browser.get(console_url(server, "/"))
    assert urllib.parse.urlsplit(browser.current_url).path == "/login"
    for path in ("/api/overview", "/api/sessions", "/api/statements", "/api/waits"):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(console_url(server, path), timeout=10)
        assert e.value.code == 401, path

    log_in(browser, server, "postgres", "wrong")
    assert login_error(browser) == 'password authentication failed for user "postgres"'
    log_in(browser, server, "nobody", PASSWORD)
    assert login_error(browser) in ('role "nobody" does not exist',
                                    'password authentication failed for user "nobody"')
    with psycopg.connect(host=str(server.socket_dir), port=server.port, user="postgres",
                         dbname="postgres", autocommit=True) as c:
        c.execute("CREATE ROLE nologin PASSWORD 'pw'")
    log_in(browser, server, "nologin", "pw")
    assert login_error(browser) == 'role "nologin" is not permitted to log in'

    log_in(browser, server, "postgres", PASSWORD)
    assert urllib.parse.urlsplit(browser.current_url).path == "/"
    wait_for("the logged-in role", lambda: text(browser, "user") == "postgres")
    submit(browser, "logout")
    assert urllib.parse.urlsplit(browser.current_url).path == "/login"
    browser.get(console_url(server, "/"))
    assert urllib.parse.urlsplit(browser.current_url).path == "/login"


def pgbench(server, *args, **popen):
    env = dict(os.environ, PGPASSWORD=PASSWORD)
    return subprocess.Popen([pg_tool("pgbench"), "-h", server.host, "-p", str(server.port),
                             "-U", "postgres", *args, "postgres"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **popen)


def chart(browser, element_id):
    """(points drawn, the highest value) of a chart."""
    # Read in one script: the page redraws between separate WebDriver calls.
    points, drawn, top = browser.execute_script(
        "const svg = document.getElementById(arguments[0]);"
        "return [svg.querySelector('polyline').getAttribute('points'),"
        " svg.getAttribute('data-points'), svg.getAttribute('data-max')];",
        element_id)
    points = points.split()
    assert len(points) == int(drawn)
    return len(points), float(top)


def table_text(browser, element_id):
    return browser.find_element(By.ID, element_id).text


def test_charts_and_tables_show_live_data(server, browser):
    init = pgbench(server, "-i", "-s", "1")
    out, _ = init.communicate(timeout=120)
    assert init.returncode == 0, out
    log_in(browser, server, "postgres", PASSWORD)
    assert login_error(browser) is None
    wait_for("the nodes", lambda: table_text(browser, "nodes").count(" up") >= 3)

    run = pgbench(server, "-c", "2", "-T", "20", "-n")
    try:
        wait_for("throughput drawn from pgbench's transactions",
                 lambda: chart(browser, "tps-chart")[1] > 0)
        first_points, _ = chart(browser, "tps-chart")
        wait_for("new samples", lambda: chart(browser, "tps-chart")[0] > first_points)
        assert chart(browser, "latency-chart")[1] > 0
        assert float(text(browser, "tps-now")) > 0
        wait_for("pgbench's sessions", lambda: table_text(browser, "sessions").count("pgbench") >= 2)
        wait_for("pgbench's statements",
                 lambda: "UPDATE pgbench_accounts" in table_text(browser, "statements"))
    finally:
        run.wait(timeout=60)
    assert run.returncode == 0, run.stdout.read()


def test_a_blocked_session_shows_in_the_waits(server, browser):
    local = dict(host=str(server.socket_dir), port=server.port, user="postgres",
                 dbname="postgres")
    with psycopg.connect(**local, autocommit=True) as c:
        c.execute("CREATE TABLE waited (id int PRIMARY KEY, v int)")
        c.execute("INSERT INTO waited VALUES (1, 0)")
    log_in(browser, server, "postgres", PASSWORD)
    wait_for("the waits table", lambda: "nobody is waiting" in table_text(browser, "waits"))
    holder = psycopg.connect(**local)
    holder.execute("UPDATE waited SET v = 1 WHERE id = 1")
    waiter = psycopg.connect(**local, autocommit=True)
    pid = waiter.info.backend_pid
    blocked = threading.Thread(target=lambda: waiter.execute("UPDATE waited SET v = 2 WHERE id = 1"))
    blocked.start()
    try:
        waits = wait_for("the blocked session", lambda: (t := table_text(browser, "waits"))
                         and str(pid) in t and t)
        assert "Lock" in waits and "UPDATE waited SET v = 2" in waits
    finally:
        holder.commit()
        blocked.join(timeout=30)
        holder.close()
        waiter.close()
    wait_for("the wait to end", lambda: "nobody is waiting" in table_text(browser, "waits"))
