pub mod tmux;
