"""The placement map (`--map FILE`): the fleet by topology level as plain data (`fleet_map`,
which host goes in which block and domain: `tree`), where each box goes (`geometry`), and the two
writers (`html`, `png`), chosen by the file's extension (`file`)."""
