"""The one-line error every tool reports (standard library only: tools/bpe.py needs no numpy).

Messages quote names taken from the input (GGUF keys and tensor names, JSON keys), which a hostile
file may fill with newlines, control bytes or megabytes: those are escaped, and a message over
MAX_MESSAGE characters keeps its start and its end, so it stays one readable line."""


class OneLineError(Exception):
    exit_code = 1
    MAX_MESSAGE = 600

    def __init__(self, message=""):
        text = str(message)
        if any(ord(c) < 32 or ord(c) == 127 for c in text):
            text = "".join(c if 32 <= ord(c) != 127 else "\\x%02x" % ord(c) for c in text)
        if len(text) > self.MAX_MESSAGE:
            half = self.MAX_MESSAGE // 2
            text = "%s ... [%d characters] ... %s" % (text[:half], len(text) - 2 * half, text[-half:])
        super().__init__(text)
