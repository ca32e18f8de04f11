#!/usr/bin/env python3
"""The flights page in a real browser: headless Chromium (Debian's chromium and
chromedriver, driven by Selenium; nothing is downloaded) opens the page served
by web/front.py in front of the flights service (its clock standing at a known
simulated time), drags the departure box onto New York's airports and the
arrival box onto California with the mouse, waits for the update, and checks that the
flights the page lists are exactly those a plain filter of the flight files
gives for that time and those boxes; then for flights in either box; then for
the departure box alone;
then restarts the front and checks that the page reconnects by itself.
Saves a screenshot (--screenshot) that docs/flights.md shows.
"""
import argparse
import os
import shutil
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service as DriverService
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

import harness

NOW = 1372953600  # 2013-07-04T16:00:00Z
DEPARTURE = [-75.0, 40.2, -73.0, 41.4]    # EWR, JFK and LGA (at this scale they are 3 pixels apart)
ARRIVAL = [-123.5, 32.0, -116.0, 39.0]     # SFO, OAK, SJC, SMF, LAX, BUR, LGB, SNA, SAN, PSP
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print(f"FAIL: {what}", flush=True)


def browser(chromium, chromedriver):
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1500,1000", "--force-device-scale-factor=1"):
        options.add_argument(flag)
    return webdriver.Chrome(service=DriverService(executable_path=chromedriver), options=options)


def wait(driver, script, what, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


def drag(driver, start, end):
    actions = ActionChains(driver, duration=50)
    pointer = actions.w3c_actions.pointer_action
    pointer.move_to_location(round(start["x"]), round(start["y"]))
    pointer.pointer_down()
    for step in range(1, 6):  # a few moves on the way, as a hand would
        f = step / 5
        pointer.move_to_location(round(start["x"] + (end["x"] - start["x"]) * f),
                                 round(start["y"] + (end["y"] - start["y"]) * f))
    pointer.pointer_up()
    actions.perform()


def place_box(driver, which, target):
    """Resizes the box to the target's size, then moves it onto the target, by mouse."""
    to_client = "return window.flightsDemo.toClient(arguments[0], arguments[1]);"
    box = driver.execute_script("return window.flightsDemo.boxes()[arguments[0]];", which)
    corner = driver.execute_script(to_client, box["east"], box["south"])
    new_corner = driver.execute_script(to_client, box["west"] + target[2] - target[0],
                                       box["north"] - (target[3] - target[1]))
    drag(driver, corner, new_corner)
    box = driver.execute_script("return window.flightsDemo.boxes()[arguments[0]];", which)
    inside = driver.execute_script(to_client, (box["west"] + box["east"]) / 2, (box["south"] + box["north"]) / 2)
    top_left = driver.execute_script(to_client, box["west"], box["north"])
    goal = driver.execute_script(to_client, target[0], target[3])
    drag(driver, inside, {"x": inside["x"] + goal["x"] - top_left["x"], "y": inside["y"] + goal["y"] - top_left["y"]})
    box = driver.execute_script("return window.flightsDemo.boxes()[arguments[0]];", which)
    placed = [box["west"], box["south"], box["east"], box["north"]]
    # One pixel is 0.1 degree of longitude and 0.075 of latitude.
    check(all(abs(a - b) < 0.25 for a, b in zip(placed, target)), f"{which} box placed at {placed}, target {target}")
    return placed


def shown_result(driver):
    """Waits until the page shows the answer to its current query; returns (boxes, listed ids)."""
    script = """
        const q = window.flightsDemo.query(), r = window.flightsDemo.lastResult();
        if (!r) return null;
        const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
        if (!same(r.departure, q.departure) || !same(r.arrival, q.arrival) || r.combine !== q.combine) return null;
        const ids = Array.from(document.querySelectorAll('#flight-list li'), (li) => Number(li.dataset.id));
        return [q.departure, q.arrival, ids];"""
    # One script reads the query and the list together: the page redraws the list with every update.
    departure, arrival, ids = wait(driver, script, "the answer to the page's query")
    return departure, arrival, sorted(ids)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    harness.add_arguments(parser)
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--chromedriver", default=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    parser.add_argument("--screenshot", required=True, help="PNG to write (docs/figures/flights.png comes from here)")
    args = parser.parse_args()
    for program in (args.chromium, args.chromedriver):
        if not os.access(program, os.X_OK):
            sys.exit(f"test_browser: {program} is missing (Debian: apt-get install chromium chromium-driver; "
                     "scripts/install_deps.sh does it)")

    data = harness.load_data(args.data)
    service = harness.start_service(args, "2013-07-04T16:00Z")
    front = harness.start_front(args.python, service.port, args.assets)
    driver = browser(args.chromium, args.chromedriver)
    try:
        driver.get(f"http://127.0.0.1:{front.port}/")
        wait(driver, "return window.flightsDemo && window.flightsDemo.airportCount() > 100 && "
                     "window.flightsDemo.lastResult() && document.querySelectorAll('#states path').length > 50",
             "the map, the airports and a first answer")

        departure = place_box(driver, "departure", DEPARTURE)
        arrival = place_box(driver, "arrival", ARRIVAL)
        got_departure, got_arrival, ids = shown_result(driver)
        check(got_departure == departure and got_arrival == arrival, "the page asked for the boxes it shows")
        want = harness.expected_ids(data, NOW, departure, arrival)
        check(ids == want, f"New York to California: the page lists {len(ids)} flights, the files give {len(want)}")
        check(want == harness.expected_ids(data, NOW, DEPARTURE, ARRIVAL), "the placed boxes hold the target airports")
        check(len(want) >= 5, f"a non-trivial answer ({len(want)} flights)")
        airborne = harness.expected_ids(data, NOW, None, None)
        check(driver.find_element(By.ID, "in-air").text == str(len(airborne)), "the in-the-air counter")
        check(driver.find_element(By.ID, "matching").text == str(len(want)), "the matching counter")
        check(driver.find_element(By.ID, "clock").text == "2013-07-04 16:00 UTC", "the clock")
        check(len(driver.find_elements(By.CSS_SELECTOR, "#arcs path")) == len(airborne), "one arc per flight")
        check(len(driver.find_elements(By.CSS_SELECTOR, "#arcs path.match")) == len(want), "the matching arcs")
        driver.save_screenshot(args.screenshot)

        # Either box ("or", the seed's front end): departing New York or landing in California.
        Select(driver.find_element(By.ID, "combine")).select_by_value("or")
        _, _, ids = shown_result(driver)
        want_or = harness.expected_ids(data, NOW, departure, arrival, either=True)
        check(ids == want_or, f"New York or California: the page lists {len(ids)}, the files give {len(want_or)}")
        Select(driver.find_element(By.ID, "combine")).select_by_value("and")

        # Departure box alone: untick the arrival box.
        driver.find_element(By.ID, "use-arrival").click()
        got_departure, got_arrival, ids = shown_result(driver)
        check(got_arrival is None, "unticked, the arrival box is not asked for")
        check(ids == harness.expected_ids(data, NOW, departure, None), "New York to anywhere")

        def severe(logs):
            return [entry for entry in logs if entry.get("level") == "SEVERE"]

        # Reading the log empties Chromium's buffer: what follows is the restart's.
        logs = driver.get_log("browser") if hasattr(driver, "get_log") else []
        check(not severe(logs), f"no errors in the page's console before the restart: {severe(logs)[:3]}")

        # The front restarts on the same port: the page reconnects by itself.
        port = front.port
        front.stop()
        wait(driver, "return document.getElementById('connection').textContent.includes('reconnecting')",
             "the page to notice the front went away")
        front = harness.start_front(args.python, service.port, args.assets, port=port)
        wait(driver, "return document.getElementById('connection').textContent === 'live'", "the page to reconnect")
        _, _, ids = shown_result(driver)
        check(ids == harness.expected_ids(data, NOW, departure, None), "the same answer after reconnecting")
        # While the front is down, each reconnection attempt the page makes is
        # refused, and Chromium logs that as an error (how many depends on how
        # long the restart takes on a loaded machine); nothing else may be.
        refused = f"WebSocket connection to 'ws://127.0.0.1:{port}/ws' failed"
        logs = driver.get_log("browser") if hasattr(driver, "get_log") else []
        errors = [entry for entry in severe(logs) if refused not in entry.get("message", "")]
        check(not errors, f"no errors in the page's console but the refused reconnections: {errors[:3]}")
    finally:
        driver.quit()
        front.stop()
        check(service.stop() == 0, "the service stops cleanly")
    if failures:
        print(f"test_browser: {len(failures)} failed checks", file=sys.stderr)
        sys.exit(1)
    print(f"test_browser: all checks passed; screenshot in {args.screenshot}")


if __name__ == "__main__":
    main()
