# Prints the splat lines of a console log (see splats.awk).
# Usage: awk -v splats=scripts/splats -f splats.awk -f splat-lines.awk LOG
BEGIN { splat_load() }
{
	line = $0; sub(/\r$/, "", line); sub(/^.*\[ *[0-9]+\.[0-9]+\] /, "", line)
	if (splat_match(line) != "") print
}
