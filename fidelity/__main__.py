from fidelity.cli import main
from fidelity.command_exit import end_command

end_command(main)
