"""The chat page at / in headless Chromium (Debian's chromium + chromium-driver, driven by Selenium): a real
two-turn conversation with the scripted model, reasoning shown apart from the answer, the history sent back
with the second turn, and a screenshot whose text (OCR by Debian's tesseract) shows the reply.
"""
import os
import shutil
import subprocess
import unittest

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from server_harness import WORK, Server, scripted_model


def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1000,700",
              "--force-device-scale-factor=1"):
        opts.add_argument(a)
    return webdriver.Chrome(options=opts, service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"))


class ChatPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(scripted_model(), "--max-context", "256")
        cls.driver = browser()

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        rc = cls.server.stop()
        assert rc == 0, f"tg-llm exited with {rc}"

    def send(self, text):
        box = self.driver.find_element(By.ID, "input")
        box.send_keys(text)
        box.send_keys(Keys.ENTER)
        WebDriverWait(self.driver, 60).until(
            lambda d: (b := d.find_elements(By.CSS_SELECTOR, ".msg.assistant, .msg.error")) and b[-1].get_attribute("data-done") == "true")
        return self.driver.find_elements(By.CSS_SELECTOR, ".msg")[-1]

    def test_conversation(self):
        d = self.driver
        d.get(self.server.url + "/")
        WebDriverWait(d, 30).until(lambda d: d.find_element(By.ID, "status").text.startswith("ready"))
        self.assertEqual(d.find_element(By.ID, "status").text, "ready: scripted")

        start = len(self.server.log)
        first = self.send("H")
        self.assertEqual(first.get_attribute("class"), "msg assistant")
        self.assertEqual(first.text, "Hello, world!")

        second = self.send("R")
        thinking = second.find_element(By.CSS_SELECTOR, "details.reasoning")
        self.assertEqual(second.find_element(By.CSS_SELECTOR, "span").text, "The answer is 4.")
        thinking.find_element(By.TAG_NAME, "summary").click()
        self.assertEqual(thinking.find_element(By.TAG_NAME, "div").text, "Let me think.")
        self.assertEqual([m.text for m in d.find_elements(By.CSS_SELECTOR, ".msg.user")], ["H", "R"])
        # the second turn carried the history: <s> H "Hello, world!" R is 1 + 1 + 13 + 1 tokens, the first two cached
        lines = self.server.request_lines(start, at_least=2)
        self.assertEqual(len(lines), 2, lines)
        self.assertRegex(lines[1], r"cached 2, new 14,")

        shot = os.path.join(WORK, "chat_page.png")
        d.save_screenshot(shot)
        ocr = subprocess.run(["tesseract", shot, "-", "--psm", "3"], capture_output=True, text=True, check=True).stdout
        print(f"\nOCR of {shot}:\n{ocr}")
        for words in ("Hello, world!", "The answer is 4."):
            self.assertIn(words, ocr)


if __name__ == "__main__":
    unittest.main()
