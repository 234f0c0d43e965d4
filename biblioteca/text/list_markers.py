"""CommonMark's list item markers, as regex fragments shared by the sentence splitter and the trimmer.

A bullet is `-`, `*` or `+`; an ordered marker is one to nine ASCII digits and `.` or `)` (CommonMark 5.2).
Each reader adds what must follow the marker where it reads it: a space, a tab, or the line's end.
"""

BULLET = r"[-*+]"
ORDERED = r"[0-9]{1,9}[.)]"
LIST_MARKER = rf"(?:{BULLET}|{ORDERED})"
